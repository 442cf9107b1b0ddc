/*
 * kernel_common.c: the kernel lookup (the table is generated: emu_kernels.h), the per-channel
 * requantization pipeline and the int16 GEMM.
 *
 * Requantization (TFLite reference_integer_ops/conv.h output stage):
 *     (M_c, s_c) = QuantizeMultiplier((double)s_in * (double)s_w[c] / (double)s_out)
 *     out[c]     = clamp(MBQM(acc[c] + bias[c], M_c, s_c) + z_out, act_min, act_max)
 * acc + bias is formed in int64 (TFLite's int32 accumulator never overflows for filters of at
 * most 2^16 taps: |w| <= 127, |x - z_in| <= 255), or in int32 where prepare proves it fits
 * (the narrow path). Both loops run over channels without branches so they vectorize.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "simd.h"
#include "simd_neon.h"

#ifdef EMU_DISPATCH
bool emu_avx512;
__attribute__((constructor)) static void detect_avx512(void) {
    __builtin_cpu_init();
    emu_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512vnni");
}
#endif

static const EmuKernel *const table[] = {EMU_KERNEL_TABLE};

const EmuKernel *emu_kernel(int32_t code) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i]->code == code) return table[i];
    return NULL;
}

bool emu_dims_are(const EmuOperand *o, uint32_t rank, const uint32_t *dims) {
    if (o->rank != rank) return false;
    for (uint32_t i = 0; i < rank; i++)
        if (o->dims[i] != dims[i]) return false;
    return true;
}

/* bound[c] = 255 * sum |w| over channel c's weights + |bias[c]|: |acc + bias| can be no more
 * (|x - z_in| <= 255), whatever the input. Left as it is (taps * 255 * 128 + |bias[c]|) when the
 * weights do not have `channels` along `channel_dim`. */
static void sum_bounds(const EmuOperand *f, int32_t channels, uint32_t channel_dim,
                       const int32_t *bias, int64_t *bound) {
    const uint64_t taps = emu_elements(f) / (uint64_t)channels;
    uint64_t inner = 1;
    for (uint32_t d = channel_dim + 1; d < f->rank; d++) inner *= f->dims[d];
    if (channel_dim >= f->rank || f->dims[channel_dim] != (uint32_t)channels) return;
    for (int32_t c = 0; c < channels; c++) bound[c] = bias[c] < 0 ? -(int64_t)bias[c] : bias[c];
    const int8_t *w = f->value;
    for (uint64_t o = 0; o < taps / inner; o++)
        for (int32_t c = 0; c < channels; c++, w += inner) {
            int64_t sum = 0; /* a local: int8 loads may alias bound[] */
            for (uint64_t k = 0; k < inner; k++) sum += abs(w[k]);
            bound[c] += 255 * sum;
        }
}

/* Whether every channel's (acc + bias) * 2^max(s_c, 0) stays in int32 given |acc + bias| <=
 * bound[c]. */
static bool narrow_fits(const EmuRequant *rq, const int64_t *bound) {
    for (int32_t c = 0; c < rq->channels; c++) {
        const int s = rq->shift[c];
        if (s <= 0 ? bound[c] > EMU_INT32_MAX : s > 30 || (bound[c] << s) > EMU_INT32_MAX)
            return false;
    }
    return true;
}

EMU_BODY int8_t requant_narrow(int32_t v, int32_t mult, int32_t right, int32_t mask, int32_t z,
                               int32_t lo, int32_t hi);

/* Whether every channel of a narrow pipeline leaves emu_requant_nudge_avx2 room (simd.h), and
 * each channel's shift for it in e[c]: |h| <= hmax = (vmax M >> 31) + 1 for |v| <= vmax =
 * bound * 2^max(s, 0) (SRDHM rounds once), and hmax + 2^e (|z| + 1) + 1 < 2^31 bounds the int32
 * sum h + nudge - [h < 0]. A channel whose output is one code k whatever its sum needs no room
 * (the requantization is monotone in v, and v lies in bias +- (bound - |bias|) times
 * 2^max(s, 0): a dead channel's huge bias or a right shift so large that RDBPOT is 0 for every
 * sum, which z 2^e would overflow): k[c] = that code (else 256), its lanes take M = 0, e = 1
 * and nudge 2k + 1, which give (2k + 1) >> 1 = k. */
static bool nudge_fits(const EmuRequant *rq, const int64_t *bound, int32_t z, int32_t lo,
                       int32_t hi, int32_t *e, int32_t *k) {
    const int64_t za = z < 0 ? -(int64_t)z : z;
    for (int32_t c = 0; c < rq->channels; c++) {
        const int s = rq->shift[c], left = s > 0 ? s : 0;
        const int64_t b = rq->bias[c], w = bound[c] - (b < 0 ? -b : b);
        const int32_t r = (int32_t)rq->right[c], mask = (int32_t)rq->mask[c];
        const int32_t m = (int32_t)rq->mult[c];
        const int8_t k0 = requant_narrow((int32_t)((b - w) * (INT64_C(1) << left)), m, r, mask, z,
                                         lo, hi);
        const int8_t k1 = requant_narrow((int32_t)((b + w) * (INT64_C(1) << left)), m, r, mask, z,
                                         lo, hi);
        k[c] = k0 == k1 ? k0 : 256;
        if (k0 == k1) {
            e[c] = 1;
            continue;
        }
        const int64_t vmax = bound[c] * (INT64_C(1) << left);
        const int64_t hmax = ((vmax * rq->mult[c]) >> 31) + 1;
        if (r > 30 || hmax + (INT64_C(1) << r) * (za + 1) + 1 > EMU_INT32_MAX) return false;
        e[c] = r;
    }
    return true;
}

int emu_requant_prepare(const NeuronModel *m, uint32_t in, uint32_t w, uint32_t bias,
                        uint32_t out, int32_t channels, uint32_t channel_dim, int32_t fuse,
                        EmuNumerics num, EmuRequant *rq) {
    const int rounding = num.rounding;
    const EmuOperand *x = &m->opnds[in], *f = &m->opnds[w], *b = &m->opnds[bias],
                     *y = &m->opnds[out];
    memset(rq, 0, sizeof *rq);
    EMU_CHECK(emu_is_int8_act(x->type) && emu_is_int8_act(y->type));
    EMU_CHECK(f->lifetime == EMU_CONST || f->has_value);
    if (f->type == NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL) {
        EMU_CHECK(f->channel_count == (uint32_t)channels && f->channel_dim == channel_dim);
    } else {
        EMU_CHECK(f->zero_point == 0 && f->scale > 0.0f); /* symmetric per-tensor weights */
    }
    EMU_CHECK(b->has_value && (b->omitted || (b->rank == 1 && b->dims[0] == (uint32_t)channels)));
    rq->channels = channels;
    rq->mult = malloc((size_t)channels * sizeof *rq->mult);
    rq->shift = malloc((size_t)channels * sizeof *rq->shift);
    rq->bias = calloc((size_t)channels, sizeof *rq->bias);
    rq->lmul = malloc((size_t)channels * sizeof *rq->lmul);
    rq->right = malloc((size_t)channels * sizeof *rq->right);
    rq->mask = malloc((size_t)channels * sizeof *rq->mask);
    rq->round = malloc((size_t)channels * sizeof *rq->round);
    if (rq->mult == NULL || rq->shift == NULL || rq->bias == NULL || rq->lmul == NULL ||
        rq->right == NULL || rq->mask == NULL || rq->round == NULL) {
        emu_requant_free(rq);
        return NEURON_OUT_OF_MEMORY;
    }
    if (!b->omitted) memcpy(rq->bias, b->value, (size_t)channels * sizeof *rq->bias);
    const uint64_t taps = emu_elements(f) / (uint64_t)channels; /* terms of one channel's sum */
    int64_t *bound = calloc((size_t)channels, sizeof *bound);
    if (bound == NULL) {
        emu_requant_free(rq);
        return NEURON_OUT_OF_MEMORY;
    }
    for (int32_t c = 0; c < channels; c++) { /* from the depth alone, before reading weights */
        const int64_t v = rq->bias[c];
        bound[c] = (int64_t)taps * 255 * 128 + (v < 0 ? -v : v);
    }
    rq->narrow = rounding == EMU_ROUND_DOUBLE && taps <= 65536;
    for (int32_t c = 0; c < channels; c++) {
        const float s_w = f->channel_count ? f->channel_scales[c] : f->scale;
        const double real = (double)x->scale * (double)s_w / (double)y->scale;
        if (!emu_quantize_multiplier(real, rounding, &rq->mult[c], &rq->shift[c])) {
            free(bound);
            emu_requant_free(rq);
            return NEURON_BAD_DATA; /* e.g. s_out = 1e-38: a multiplier of 2^118 */
        }
        const int s = rq->shift[c];
        if (rounding == EMU_ROUND_SINGLE) {
            rq->lmul[c] = 1;
            rq->mask[c] = 0;
            rq->right[c] = 31 - s;
            rq->round[c] = INT64_C(1) << (30 - s);
        } else {
            rq->lmul[c] = INT64_C(1) << (s > 0 ? s : 0);
            rq->right[c] = s > 0 ? 0 : -s;
            rq->mask[c] = (INT64_C(1) << rq->right[c]) - 1;
            rq->round[c] = INT64_C(1) << 30;
        }
    }
    if (rq->narrow && !narrow_fits(rq, bound)) { /* the weights' own sums may still fit */
        sum_bounds(f, channels, channel_dim, rq->bias, bound);
        rq->narrow = narrow_fits(rq, bound);
    }
    int32_t *ne = rq->narrow ? malloc(2 * (size_t)channels * sizeof *ne) : NULL, *nk = NULL;
    if (rq->narrow && ne == NULL) {
        free(bound);
        emu_requant_free(rq);
        return NEURON_OUT_OF_MEMORY;
    }
    if (ne != NULL) nk = ne + channels;
    int32_t act_lo, act_hi;
    emu_activation_range(fuse, y->scale, y->zero_point, &act_lo, &act_hi);
    const bool nudge =
        rq->narrow && nudge_fits(rq, bound, y->zero_point, act_lo, act_hi, ne, nk);
    free(bound);
    if (rq->narrow) {
        int32_t g = 64, r = channels; /* period = 64 / gcd(channels, 64) */
        while (r != 0) {
            const int32_t t = g % r;
            g = r;
            r = t;
        }
        rq->period = 64 / g;
        const size_t len = (size_t)rq->period * channels;
        rq->left32 = malloc(len * sizeof *rq->left32);
        rq->m32 = malloc(len * sizeof *rq->m32);
        rq->right32 = malloc(len * sizeof *rq->right32);
        rq->mask32 = malloc(len * sizeof *rq->mask32);
        rq->bias32 = malloc(len * sizeof *rq->bias32);
        if (rq->left32 == NULL || rq->m32 == NULL || rq->right32 == NULL || rq->mask32 == NULL ||
            rq->bias32 == NULL) {
            emu_requant_free(rq);
            return NEURON_OUT_OF_MEMORY;
        }
        for (size_t i = 0; i < len; i++) {
            const size_t c = i % (size_t)channels;
            rq->left32[i] = rq->shift[c] > 0 ? rq->shift[c] : 0;
            rq->m32[i] = (int32_t)rq->mult[c]; /* M_c < 2^31 */
            rq->right32[i] = (int32_t)rq->right[c];
            rq->mask32[i] = (int32_t)rq->mask[c];
            rq->bias32[i] = rq->bias[c];
            rq->any_left = rq->any_left || rq->left32[i] != 0;
        }
    }
    if (nudge) {
        const size_t len = (size_t)rq->period * channels;
        bool e0 = false; /* some channel has e = 0: its [h < 0] is masked off */
        for (int32_t c = 0; c < channels; c++) e0 = e0 || ne[c] == 0;
        rq->nudge32 = malloc(len * sizeof *rq->nudge32);
        rq->nright32 = malloc(len * sizeof *rq->nright32);
        rq->nm32 = malloc((len + 1) * sizeof *rq->nm32);
        rq->neg32 = e0 ? malloc(len * sizeof *rq->neg32) : NULL;
        if (rq->nudge32 == NULL || rq->nright32 == NULL || rq->nm32 == NULL ||
            (e0 && rq->neg32 == NULL)) {
            free(ne);
            emu_requant_free(rq);
            return NEURON_OUT_OF_MEMORY;
        }
        for (size_t i = 0; i < len; i++) { /* z 2^e: |z| 2^e < 2^31 (nudge_fits) */
            const size_t c = i % (size_t)channels;
            const int32_t e = ne[c];
            rq->nright32[i] = e;
            rq->nm32[i] = nk[c] == 256 ? rq->m32[i] : 0;
            rq->nudge32[i] = nk[c] != 256 ? 2 * nk[c] + 1
                                          : (e > 0 ? INT32_C(1) << (e - 1) : 0) +
                                                y->zero_point * (INT32_C(1) << e);
            if (e0) rq->neg32[i] = e > 0 ? -1 : 0;
        }
        rq->nm32[len] = 0;
    }
    free(ne);
    rq->isa = emu_isa();
    rq->z_out = y->zero_point;
    rq->rounding = rounding;
    rq->wrap = num.wrap; /* narrow rows cannot overflow: the same either way */
    emu_activation_range(fuse, y->scale, y->zero_point, &rq->lo, &rq->hi);
    return NEURON_NO_ERROR;
}

void emu_requant_free(EmuRequant *rq) {
    free(rq->mult);
    free(rq->shift);
    free(rq->bias);
    free(rq->lmul);
    free(rq->right);
    free(rq->mask);
    free(rq->round);
    free(rq->left32);
    free(rq->m32);
    free(rq->right32);
    free(rq->mask32);
    free(rq->bias32);
    free(rq->nudge32);
    free(rq->nright32);
    free(rq->nm32);
    free(rq->neg32);
    memset(rq, 0, sizeof *rq);
}

/* emu_mbqm unrolled over the channels with the per-channel constants of prepare, as one
 * branch-free loop the compiler vectorizes (int64 lanes). The same int64 operations in the same
 * order as emu_mbqm, so the same results; SRDHM's saturation (a = b = -2^31) cannot occur since
 * M_c is in [0, 2^31): QuantizeMultiplier never yields a negative multiplier. */
/* The narrow case of the loop below in int32 lanes. h = SRDHM(v, M) fits int32 (|v * M| <
 * 2^62), so its low 32 bits, taken from a logical shift, are h itself (gcc and clang convert
 * uint32 to int32 modulo 2^32). (h >> e) + carry cannot overflow (carry needs e >= 1); it is
 * narrowed to +-2^16 before adding z_out, which leaves the final clamp unchanged. */
EMU_BODY int8_t requant_narrow(int32_t v, int32_t mult, int32_t right, int32_t mask, int32_t z,
                               int32_t lo, int32_t hi) {
    const uint64_t prod = (uint64_t)((int64_t)v * mult + (INT64_C(1) << 30));
    const int32_t h = (int32_t)(uint32_t)(prod >> 31);
    const int32_t rem = h & mask, thr = (mask >> 1) + (h < 0 ? 1 : 0);
    int32_t t = (h >> right) + (rem > thr ? 1 : 0);
    t = t < -65536 ? -65536 : (t > 65536 ? 65536 : t);
    const int32_t q = t + z;
    return (int8_t)(q < lo ? lo : (q > hi ? hi : q));
}

EMU_BODY void requant_row_narrow(const EmuRequant *rq, const int32_t *restrict acc,
                                 int8_t *restrict out, int32_t n) {
    const int32_t z = rq->z_out, lo = rq->lo, hi = rq->hi;
    const int32_t *restrict bias = rq->bias32, *restrict mult = rq->m32,
                            *restrict right = rq->right32, *restrict mask = rq->mask32,
                            *restrict left = rq->left32;
    const EmuNarrow k = {bias, left, mult, right, mask, z, lo, hi};
    if (rq->isa == EMU_ISA_AVX512) { /* the same integers in intrinsics (simd.c) */
        emu_requant_narrow_avx512(&k, acc, out, n);
        return;
    }
    if (rq->isa == EMU_ISA_AVX2 && rq->nudge32 != NULL) { /* fewer steps, the same integers */
        const EmuNudge q = {bias,          rq->any_left ? left : NULL, rq->nm32, rq->nright32,
                            rq->nudge32,   rq->neg32,                  lo,       hi};
        emu_requant_nudge_avx2(&q, acc, out, n);
        return;
    }
    if (rq->isa == EMU_ISA_AVX2) {
        emu_requant_narrow_avx2(&k, acc, out, n);
        return;
    }
    if (rq->isa == EMU_ISA_NEON) { /* aarch64 (simd_neon.c) */
        emu_requant_narrow_neon(&k, acc, out, n);
        return;
    }
    for (int32_t c = 0; c < n; c++) /* (acc + bias) * 2^left: no overflow (kernels.h) */
        out[c] = requant_narrow((acc[c] + bias[c]) * (1 << left[c]), mult[c], right[c], mask[c],
                                z, lo, hi);
}

EMU_BODY void requant_row_wide(const EmuRequant *rq, const int32_t *restrict acc,
                               int8_t *restrict out) {
    const int32_t n = rq->channels;
    const int64_t z = rq->z_out, lo = rq->lo, hi = rq->hi;
    const int32_t *restrict bias = rq->bias;
    const int64_t *restrict mult = rq->mult, *restrict right = rq->right,
                            *restrict round = rq->round;
    if (rq->wrap) { /* the definition itself, channel by channel: int32 wraps modulo 2^32 */
        for (int32_t c = 0; c < n; c++) {
            const int64_t v = emu_wrap32((int64_t)acc[c] + bias[c]); /* TFLite's int32 acc */
            const int64_t h = emu_mbqm_acc(v, mult[c], rq->shift[c], rq->rounding, true);
            const int64_t q = emu_add_offset(h, rq->z_out, true);
            out[c] = (int8_t)(q < lo ? lo : (q > hi ? hi : q));
        }
        return;
    }
    if (rq->rounding == EMU_ROUND_SINGLE) {
        for (int32_t c = 0; c < n; c++) {
            const int64_t v = emu_sat32((int64_t)acc[c] + bias[c]); /* TFLite's int32 acc */
            const int64_t q = ((v * mult[c] + round[c]) >> right[c]) + z;
            out[c] = (int8_t)(q < lo ? lo : (q > hi ? hi : q));
        }
        return;
    }
    const int64_t *restrict lmul = rq->lmul, *restrict mask = rq->mask;
    for (int32_t c = 0; c < n; c++) {
        /* x * 2^s in TFLite's int32, saturated where it would overflow: |v * M| < 2^62 */
        const int64_t v = emu_sat32(emu_sat32((int64_t)acc[c] + bias[c]) * lmul[c]);
        const int64_t h = (v * mult[c] + (INT64_C(1) << 30)) >> 31; /* SRDHM */
        const int64_t rem = (int64_t)((uint64_t)h & (uint64_t)mask[c]);
        const int64_t thr = (mask[c] >> 1) + (h < 0 ? 1 : 0);
        const int64_t q = (h >> right[c]) + (rem > thr ? 1 : 0) + z; /* RDBPOT */
        out[c] = (int8_t)(q < lo ? lo : (q > hi ? hi : q));
    }
}

/* `rows` rows: acc rows `acc_stride` apart, out rows `channels` apart. */
EMU_BODY void requant_rows(const EmuRequant *rq, const int32_t *acc, size_t acc_stride,
                           int8_t *out, int32_t rows) {
    const size_t n = (size_t)rq->channels;
    int32_t r = 0;
    if (rq->narrow && acc_stride == n) /* period rows at a time, as one flat run */
        for (; r + rq->period <= rows; r += rq->period)
            requant_row_narrow(rq, acc + r * n, out + r * n, rq->period * rq->channels);
    if (rq->narrow)
        for (; r < rows; r++)
            requant_row_narrow(rq, acc + r * acc_stride, out + r * n, rq->channels);
    else
        for (; r < rows; r++) requant_row_wide(rq, acc + r * acc_stride, out + r * n);
}

EMU_DISPATCHED((const EmuRequant *rq, const int32_t *acc, size_t acc_stride, int8_t *out,
                int32_t rows),
               requant_rows, (rq, acc, acc_stride, out, rows))

void emu_requant_rows(const EmuRequant *rq, const int32_t *acc, size_t acc_stride, int8_t *out,
                      int32_t rows) {
    EMU_CALL(requant_rows, (rq, acc, acc_stride, out, rows));
}

void emu_requant_slice(const EmuRequant *rq, int32_t c0, int32_t n, EmuRequant *out) {
    *out = *rq;
    out->channels = n;
    out->period = 1; /* the narrow constants' first row, offset: one output row at a time */
#define EMU_SLICE(f) out->f = rq->f == NULL ? NULL : rq->f + c0
    EMU_SLICE(mult);
    EMU_SLICE(shift);
    EMU_SLICE(bias);
    EMU_SLICE(lmul);
    EMU_SLICE(right);
    EMU_SLICE(mask);
    EMU_SLICE(round);
    EMU_SLICE(left32);
    EMU_SLICE(m32);
    EMU_SLICE(right32);
    EMU_SLICE(mask32);
    EMU_SLICE(bias32);
    EMU_SLICE(nudge32);
    EMU_SLICE(nright32);
    EMU_SLICE(nm32);
    EMU_SLICE(neg32);
#undef EMU_SLICE
}

void emu_requant_row(const EmuRequant *rq, const int32_t *acc, int8_t *out) {
    EMU_CALL(requant_rows, (rq, acc, 0, out, 1));
}

/* Dot products of int16 rows: the inner loop runs over contiguous k, which gcc and clang turn
 * into widening multiply-adds (pmaddwd / smlal) at -O2 and above. Blocking: four output columns
 * share each load of an `a` row, and the caller hands over a tile of rows whose im2col data
 * stays in cache while all columns stream past. |sum| <= depth * 255 * 128 < 2^31 for
 * depth <= 2^16. */
void emu_gemm_s16(const int16_t *a, const int16_t *b, int32_t *out, int32_t rows, int32_t cols,
                  int32_t depth) {
    int32_t o = 0;
    for (; o + 4 <= cols; o += 4) {
        const int16_t *b0 = b + (size_t)o * depth, *b1 = b0 + depth, *b2 = b1 + depth,
                      *b3 = b2 + depth;
        for (int32_t p = 0; p < rows; p++) {
            const int16_t *ap = a + (size_t)p * depth;
            int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int32_t k = 0; k < depth; k++) {
                const int32_t v = ap[k];
                s0 += v * b0[k];
                s1 += v * b1[k];
                s2 += v * b2[k];
                s3 += v * b3[k];
            }
            int32_t *op = out + (size_t)p * cols + o;
            op[0] = s0;
            op[1] = s1;
            op[2] = s2;
            op[3] = s3;
        }
    }
    for (; o < cols; o++) {
        const int16_t *bo = b + (size_t)o * depth;
        for (int32_t p = 0; p < rows; p++) {
            const int16_t *ap = a + (size_t)p * depth;
            int32_t s = 0;
            for (int32_t k = 0; k < depth; k++) s += (int32_t)ap[k] * bo[k];
            out[(size_t)p * cols + o] = s;
        }
    }
}

/* 4x4 register tile: sixteen dot products share every load of four `a` rows and four `b` rows;
 * gcc and clang vectorize the k loop into sixteen vector accumulators (pmaddwd / vpdpwssd /
 * smlal). Bounds as emu_gemm_s16 (the zero padding adds nothing). */
EMU_BODY void gemm_tile_4x4(const int16_t *restrict a, const int16_t *restrict b, int32_t depth,
                          int32_t *restrict out, int32_t ldo) {
    const int16_t *a0 = a, *a1 = a0 + depth, *a2 = a1 + depth, *a3 = a2 + depth;
    const int16_t *b0 = b, *b1 = b0 + depth, *b2 = b1 + depth, *b3 = b2 + depth;
    int32_t s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
    int32_t s20 = 0, s21 = 0, s22 = 0, s23 = 0, s30 = 0, s31 = 0, s32 = 0, s33 = 0;
    for (int32_t k = 0; k < depth; k++) {
        const int32_t x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k];
        const int32_t w0 = b0[k], w1 = b1[k], w2 = b2[k], w3 = b3[k];
        s00 += x0 * w0, s01 += x0 * w1, s02 += x0 * w2, s03 += x0 * w3;
        s10 += x1 * w0, s11 += x1 * w1, s12 += x1 * w2, s13 += x1 * w3;
        s20 += x2 * w0, s21 += x2 * w1, s22 += x2 * w2, s23 += x2 * w3;
        s30 += x3 * w0, s31 += x3 * w1, s32 += x3 * w2, s33 += x3 * w3;
    }
    int32_t *o0 = out, *o1 = o0 + ldo, *o2 = o1 + ldo, *o3 = o2 + ldo;
    o0[0] = s00, o0[1] = s01, o0[2] = s02, o0[3] = s03;
    o1[0] = s10, o1[1] = s11, o1[2] = s12, o1[3] = s13;
    o2[0] = s20, o2[1] = s21, o2[2] = s22, o2[3] = s23;
    o3[0] = s30, o3[1] = s31, o3[2] = s32, o3[3] = s33;
}

EMU_BODY void gemm_blocked(const int16_t *a, const int16_t *b, int32_t *out, int32_t rows,
                           int32_t cols, int32_t depth) {
    for (int32_t o = 0; o < cols; o += EMU_GEMM_NR)
        for (int32_t p = 0; p < rows; p += EMU_GEMM_MR)
            gemm_tile_4x4(a + (size_t)p * depth, b + (size_t)o * depth, depth,
                          out + (size_t)p * cols + o, cols);
}

EMU_DISPATCHED((const int16_t *a, const int16_t *b, int32_t *out, int32_t rows, int32_t cols,
                int32_t depth),
               gemm_blocked, (a, b, out, rows, cols, depth))

void emu_gemm_s16_blocked(const int16_t *a, const int16_t *b, int32_t *out, int32_t rows,
                          int32_t cols, int32_t depth) {
    EMU_CALL(gemm_blocked, (a, b, out, rows, cols, depth));
}

int emu_lut_path(void) {
    if (emu_lut_vbmi_ready()) return EMU_LUT_VBMI;
    if (emu_isa() == EMU_ISA_AVX2 || emu_isa() == EMU_ISA_AVX512) return EMU_LUT_AVX2;
    return emu_isa() == EMU_ISA_NEON ? EMU_LUT_NEON : EMU_LUT_C;
}

void emu_lut_apply(int path, const int8_t *table, const int8_t *x, int8_t *y, uint64_t n) {
    if (path == EMU_LUT_VBMI) {
        emu_lut_vbmi(table, x, y, n);
        return;
    }
    if (path == EMU_LUT_NEON) {
        emu_lut_neon(table, x, y, n);
        return;
    }
    if (path == EMU_LUT_AVX2) {
        emu_lut_avx2(table, x, y, n);
        return;
    }
    for (uint64_t i = 0; i < n; i++) y[i] = table[x[i] + 128];
}

int emu_lut_alloc(const NeuronModel *m, const EmuOperation *op, EmuLut **lut) {
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    *lut = NULL;
    EMU_CHECK(emu_is_int8_act(x->type) && emu_is_int8_act(y->type));
    EMU_CHECK(emu_dims_are(y, x->rank, x->dims));
    *lut = calloc(1, sizeof **lut);
    if (*lut == NULL) return NEURON_OUT_OF_MEMORY;
    (*lut)->count = emu_elements(x);
    (*lut)->path = emu_lut_path();
    return NEURON_NO_ERROR;
}

static void lut_run(const void *params, const int8_t *x, int8_t *y, uint64_t count) {
    const EmuLut *p = params;
    emu_lut_apply(p->path, p->table, x, y, count);
}

typedef struct {
    const EmuLut *lut;
    const int8_t *x;
    int8_t *y;
} LutJob;

static void lut_range(const void *job, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const LutJob *j = job;
    lut_run(j->lut, j->x + begin, j->y + begin, (uint64_t)(end - begin));
}

void emu_lut_eval(const void *params, const void *const *inputs, void *output,
                  EmuScratch *scratch) {
    const EmuLut *p = params;
    const LutJob job = {p, inputs[0], output};
    emu_parallel_for(scratch, (int64_t)p->count, emu_par_grain(scratch, 1), lut_range, &job);
}

void emu_pooling_run(const EmuPoolingParams *p, const void *in, void *out, EmuScratch *s,
                     EmuTaskFn rows) {
    const EmuPoolJob job = {p, in, out};
    const int64_t row_work = (int64_t)p->ow * p->c * p->win.filter_h * p->win.filter_w;
    emu_parallel_for(s, (int64_t)p->n * p->oh, emu_par_grain(s, row_work), rows, &job);
}

int emu_pooling_prepare(const NeuronModel *m, const EmuOperation *op, void **out) {
    *out = NULL;
    EmuWindow win;
    EMU_TRY(emu_window(m, op, &win));
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    const bool wide = y->type == NEURON_TENSOR_QUANT16_SYMM && x->type == y->type;
    EMU_CHECK((emu_is_int8_act(y->type) || (wide && y->zero_point == 0)) && emu_same_quant(x, y));
    EMU_CHECK(win.pad_top < win.filter_h && win.pad_bottom < win.filter_h &&
              win.pad_left < win.filter_w && win.pad_right < win.filter_w);
    int32_t oh, ow;
    EMU_CHECK(emu_window_output(x, &win, x->dims[3], y, &oh, &ow) == NEURON_NO_ERROR);
    EmuPoolingParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    *p = (EmuPoolingParams){(int32_t)x->dims[0], (int32_t)x->dims[1], (int32_t)x->dims[2],
                   (int32_t)x->dims[3], oh, ow, 0, 0, win, wide};
    if (wide)
        emu_activation_range16(win.fuse, y->scale, &p->lo, &p->hi);
    else
        emu_activation_range(win.fuse, y->scale, y->zero_point, &p->lo, &p->hi);
    *out = p;
    return NEURON_NO_ERROR;
}

EmuDwGeom emu_dw_geom(const EmuWindow *win, int32_t h, int32_t w, int32_t c, int32_t ow) {
    return (EmuDwGeom){h, w, c, win->filter_h, win->filter_w, win->stride_h, win->stride_w,
                       win->dilation_h, win->dilation_w, win->pad_top, win->pad_left, ow};
}

int emu_window_output(const EmuOperand *x, const EmuWindow *win, uint32_t channels,
                      const EmuOperand *y, int32_t *oh, int32_t *ow) {
    *oh = emu_out_size((int32_t)x->dims[1], win->filter_h, win->stride_h, win->dilation_h,
                       win->pad_top, win->pad_bottom);
    *ow = emu_out_size((int32_t)x->dims[2], win->filter_w, win->stride_w, win->dilation_w,
                       win->pad_left, win->pad_right);
    EMU_CHECK(*oh > 0 && *ow > 0);
    const uint32_t want[4] = {x->dims[0], (uint32_t)*oh, (uint32_t)*ow, channels};
    EMU_CHECK(emu_dims_are(y, 4, want));
    return NEURON_NO_ERROR;
}

/* RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR: int8 (or int16: `size` 2) in and out with equal
 * parameters, NHWC;
 * the output size from INT32 sizes or FLOAT32 scales (scaled and bounded in float, before any
 * conversion: 40000 * 60000 does not fit an int32); the align_corners / half_pixel_centers
 * flags (not both); the output dims checked. */
int emu_resize_prepare(const NeuronModel *m, const EmuOperation *op, EmuResize *r) {
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    bool flags[3] = {false, false, false}; /* NCHW, align_corners, half_pixel_centers */
    for (uint32_t i = 3; i < op->n_in; i++)
        EMU_CHECK(emu_scalar_bool(m, op->in[i], &flags[i - 3]) == NEURON_NO_ERROR);
    if (flags[0]) return EMU_UNSUPPORTED; /* the emulator computes NHWC only */
    const bool wide = y->type == NEURON_TENSOR_QUANT16_SYMM && x->type == y->type;
    EMU_CHECK(x->rank == 4 && (emu_is_int8_act(y->type) || wide) && emu_same_quant(x, y));
    r->size = wide ? 2 : 1;
    if (m->opnds[op->in[1]].type == NEURON_INT32) {
        EMU_CHECK(emu_scalar_i32(m, op->in[1], &r->ow) == NEURON_NO_ERROR &&
                  emu_scalar_i32(m, op->in[2], &r->oh) == NEURON_NO_ERROR);
    } else {
        float sw = 0.0f, sh = 0.0f;
        EMU_CHECK(emu_scalar_f32(m, op->in[1], &sw) == NEURON_NO_ERROR &&
                  emu_scalar_f32(m, op->in[2], &sh) == NEURON_NO_ERROR);
        EMU_CHECK(sw > 0.0f && sh > 0.0f && sw < 65536.0f && sh < 65536.0f);
        const float fw = floorf((float)x->dims[2] * sw), fh = floorf((float)x->dims[1] * sh);
        EMU_CHECK(fw >= 1.0f && fh >= 1.0f && fw <= 65535.0f && fh <= 65535.0f);
        r->ow = (int32_t)fw;
        r->oh = (int32_t)fh;
    }
    EMU_CHECK(!(flags[1] && flags[2]));
    EMU_CHECK(r->oh >= 1 && r->ow >= 1 && r->oh <= 65535 && r->ow <= 65535);
    const uint32_t want[4] = {x->dims[0], (uint32_t)r->oh, (uint32_t)r->ow, x->dims[3]};
    EMU_CHECK(emu_dims_are(y, 4, want));
    r->n = (int32_t)x->dims[0];
    r->h = (int32_t)x->dims[1];
    r->w = (int32_t)x->dims[2];
    r->c = (int32_t)x->dims[3];
    r->align_corners = flags[1];
    r->half_pixel = flags[2];
    return NEURON_NO_ERROR;
}
