/*
 * SOFTMAX, 16x8 (TENSOR_QUANT16_SYMM in and out, zero point 0, output scale 1/32768; LiteRT's
 * reference SoftmaxInt16, its tables made at Prepare; mdla_quant.kernels.a16_softmax):
 *
 * Two 513-entry int16 tables, 512 segments of f over [lo, hi] in double, the last entry only
 * for the slope (round: half away from zero, clamp: to int16):
 *   step = (hi - lo) / 512;  f_i = f(lo + i step) * 32768;  g = f(lo + i step + step / 2) * 32768
 *   T[i] = clamp(round(f_i) - round((round((f_{i+1} + round(f_i)) / 2) - round(g)) / 2))
 *   T[512] = clamp(round(f(hi) * 32768))
 * exp over [-10, 0] and 1 / (1 + x) over [0, 1]; read at an int16 v: i = 256 + (v >> 7),
 * t = v & 127, T[i] + ((T[i+1] - T[i]) t + 64) >> 7.
 * Per row along `axis`, (M, s) = QuantizeMultiplier(beta s_in 65535 / 10):
 *   e_j = lookup(exp, clamp16(MBQM(x_j - max x, M, s) + 32767));  S = sum e_j;  c = clz32(S)
 *   r = lookup(recip, clamp16((((S << (c - 1)) + 2^13) >> 14) - 3 * 2^15))
 *   out_j = clamp((e_j r + 2^(30 - c)) >> (31 - c), 0, 32767)
 */
#include <math.h>

#include "kernels.h"

#define SM16_SEGMENTS 512

struct EmuSoftmax16 {
    uint64_t outer, len, inner; /* rows: outer x inner, each `len` long with stride `inner` */
    int64_t m;
    int s, rounding;
    int16_t exp_table[SM16_SEGMENTS + 1], recip_table[SM16_SEGMENTS + 1];
};

static double sm16_exp(double v) { return exp(v); }
static double sm16_recip(double v) { return 1.0 / (1.0 + v); }

static int16_t sm16_clamp(double v) {
    return (int16_t)(v < -32768.0 ? -32768.0 : (v > 32767.0 ? 32767.0 : v));
}

static void sm16_table(double (*f)(double), double lo, double hi, int16_t *t) {
    const double step = (hi - lo) / SM16_SEGMENTS;
    for (int i = 0; i < SM16_SEGMENTS; i++) {
        const double sample = round(f(lo + i * step) * 32768.0);
        const double interpolated = round((f(lo + (i + 1) * step) * 32768.0 + sample) / 2.0);
        const double midpoint = round(f(lo + i * step + step / 2.0) * 32768.0);
        t[i] = sm16_clamp(sample - round((interpolated - midpoint) / 2.0));
    }
    t[SM16_SEGMENTS] = sm16_clamp(round(f(hi) * 32768.0));
}

static int64_t sm16_lookup(const int16_t *t, int64_t v) {
    const int64_t i = 256 + (v >> 7), base = t[i];
    return base + (((t[i + 1] - base) * (v & 127) + 64) >> 7);
}

int emu_softmax16_prepare(const NeuronModel *m, const EmuOperation *op, float beta, uint32_t ax,
                          int rounding, EmuSoftmax16 **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    EMU_CHECK(x->type == NEURON_TENSOR_QUANT16_SYMM && y->type == NEURON_TENSOR_QUANT16_SYMM);
    EMU_CHECK(x->zero_point == 0 && y->zero_point == 0 && y->scale == 1.0f / 32768.0f);
    EMU_CHECK(x->dims[ax] <= 65536); /* S < 2^31, as the reference's int32 sum needs */
    EmuSoftmax16 *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    p->outer = p->inner = 1;
    for (uint32_t i = 0; i < ax; i++) p->outer *= x->dims[i];
    for (uint32_t i = ax + 1; i < x->rank; i++) p->inner *= x->dims[i];
    p->len = x->dims[ax];
    const double real = (double)(x->scale * beta) / (10.0 / 65535.0); /* product in float32 */
    if (!emu_quantize_multiplier(real, rounding, &p->m, &p->s)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    p->rounding = rounding;
    sm16_table(sm16_exp, -10.0, 0.0, p->exp_table);
    sm16_table(sm16_recip, 0.0, 1.0, p->recip_table);
    *out = p;
    return NEURON_NO_ERROR;
}

static int64_t sm16_exp_of(const EmuSoftmax16 *p, int64_t d) {
    return sm16_lookup(p->exp_table, emu_clamp(emu_mbqm(d, p->m, p->s, p->rounding) + 32767,
                                               -32768, 32767));
}

void emu_softmax16_eval(const EmuSoftmax16 *p, const int16_t *x, int16_t *y) {
    for (uint64_t o = 0; o < p->outer; o++)
        for (uint64_t i = 0; i < p->inner; i++) {
            const int16_t *row = x + o * p->len * p->inner + i;
            int16_t *dst = y + o * p->len * p->inner + i;
            int64_t max = -32768, total = 0;
            for (uint64_t j = 0; j < p->len; j++)
                if (row[j * p->inner] > max) max = row[j * p->inner];
            for (uint64_t j = 0; j < p->len; j++) total += sm16_exp_of(p, row[j * p->inner] - max);
            int c = 0; /* leading zeros of S as a uint32 (S >= 2^14: the max's own term) */
            while (c < 32 && !((uint64_t)total & (UINT64_C(1) << (31 - c)))) c++;
            const int64_t shifted = ((total << (c - 1)) + (INT64_C(1) << 13)) >> 14;
            const int64_t x_recip = emu_clamp(shifted - 3 * (INT64_C(1) << 15), -32768, 32767);
            const int64_t r = sm16_lookup(p->recip_table, x_recip);
            const int right = 31 - c;
            for (uint64_t j = 0; j < p->len; j++) {
                const int64_t e = sm16_exp_of(p, row[j * p->inner] - max);
                dst[j * p->inner] =
                    (int16_t)emu_clamp((e * r + (INT64_C(1) << (right - 1))) >> right, 0, 32767);
            }
        }
}
