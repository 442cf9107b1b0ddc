/*
 * MEAN, int8 (TFLite reference/reduce.h QuantizedMeanOrSum; Prepare in reduce.cc).
 *
 *     (M, s) = QuantizeMultiplier(s_in / s_out)               in double, from float32 scales
 *     n = number of reduced elements;  k = min(floor(log2 n), 32, 31 + s)
 *     M' = floor(M * 2^k / n) (int64);  s' = s - k
 *     out = clamp(MBQM(sum x - z_in * n, M', s') + z_out)
 * Operands: input, axes TENSOR_INT32 1-D (negative axes wrap, repeats ignored), keep_dims i32
 * (positive keeps). n <= 2^23 keeps the int32 sum exact: |sum| <= 2^23 * 255 < 2^31.
 * 16x8 (int16 in and out, TENSOR_QUANT16_SYMM, zero points 0): the same formula over int16 codes,
 * clamped to [-32768, 32767]; n <= 2^16 keeps the sum within int32 (|x| <= 2^15).
 * The sums of the codes are int32 (each thread's, and their total): any part of one output's
 * codes sums to at most n * 2^7 <= 2^30 (int8), or within [-2^31, 2^31 - 2^16] (int16).
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    uint32_t rank;
    uint32_t dims[EMU_MAX_RANK];
    bool reduced[EMU_MAX_RANK];
    uint64_t in_count, out_count, n;
    int64_t m;
    int s, rounding;
    bool wrap; /* the accumulator fact (arith.h) */
    int32_t z_in, z_out;
    bool wide; /* int16 codes */
} MeanParams;

static int mean_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *axes = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    int32_t keep = 0;
    EMU_CHECK(emu_scalar_i32(m, op->in[2], &keep) == NEURON_NO_ERROR);
    const bool wide = y->type == NEURON_TENSOR_QUANT16_SYMM && x->type == y->type;
    EMU_CHECK((emu_is_int8_act(y->type) || (wide && x->zero_point == 0 && y->zero_point == 0)) &&
              x->rank >= 1);
    EMU_CHECK(axes->has_value && !axes->omitted && axes->rank == 1 && axes->dims[0] >= 1);
    MeanParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    const int32_t *av = axes->value;
    bool ok = true;
    for (uint32_t i = 0; ok && i < axes->dims[0]; i++) {
        ok = av[i] >= -(int32_t)x->rank && av[i] < (int32_t)x->rank;
        if (ok) p->reduced[av[i] < 0 ? av[i] + (int32_t)x->rank : av[i]] = true;
    }
    uint32_t want[EMU_MAX_RANK], want_rank = 0;
    p->rank = x->rank;
    p->n = 1;
    for (uint32_t d = 0; ok && d < x->rank; d++) {
        p->dims[d] = x->dims[d];
        if (p->reduced[d]) p->n *= x->dims[d];
        if (!p->reduced[d]) want[want_rank++] = x->dims[d];
        else if (keep > 0) want[want_rank++] = 1;
    }
    p->wide = wide;
    ok = ok && p->n <= (UINT64_C(1) << (wide ? 16 : 23)) &&
         (emu_dims_are(y, want_rank, want) || (want_rank == 0 && y->rank == 1 && y->dims[0] == 1));
    if (!ok) {
        free(p);
        return NEURON_BAD_DATA;
    }
    int64_t mult;
    int shift;
    if (!emu_quantize_multiplier((double)x->scale / (double)y->scale, num.rounding, &mult, &shift)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    int k = 0;
    while ((UINT64_C(1) << (k + 1)) <= p->n) k++; /* floor(log2 n) */
    if (k > 32) k = 32;
    if (k > 31 + shift) k = 31 + shift;
    p->m = (int64_t)(((uint64_t)mult << k) / p->n); /* M < 2^31, k <= 32: fits */
    p->s = shift - k;
    p->rounding = num.rounding;
    p->wrap = num.wrap;
    p->in_count = emu_elements(x);
    p->out_count = emu_elements(y);
    p->z_in = x->zero_point;
    p->z_out = y->zero_point;
    *out = p;
    return NEURON_NO_ERROR;
}

static size_t mean_scratch(const void *params) {
    return (size_t)((const MeanParams *)params)->out_count * sizeof(int32_t);
}

typedef struct {
    const MeanParams *p;
    const void *x; /* int8_t, or int16_t where p->wide */
    int64_t ostride[EMU_MAX_RANK];
} MeanJob;

/* Adds one row of `inner` codes (ELEM) at `row` into the sums at o, o + step, ... */
#define MEAN_ROW(ELEM)                                                                          \
    do {                                                                                        \
        const ELEM *restrict v = (const ELEM *)j->x + (uint64_t)r * inner;                      \
        if (step == 0) {                                                                        \
            int32_t run = 0;                                                                    \
            for (uint32_t k = 0; k < inner; k++) run += v[k];                                   \
            sum[o] += run;                                                                      \
        } else if (step == 1) { /* a kept innermost dim: one contiguous run, vectorized */      \
            int32_t *restrict acc = sum + o;                                                    \
            for (uint32_t k = 0; k < inner; k++) acc[k] += v[k];                                \
        } else {                                                                                \
            for (uint32_t k = 0; k < inner; k++) sum[o + (int64_t)k * step] += v[k];            \
        }                                                                                       \
    } while (0)

/* Adds input rows [begin, end) (rows of the innermost dim) into this thread's sums. The
 * output element of input coordinates idx is sum_d idx[d] * ostride[d] (the kept coordinates
 * in row-major order: ostride 0 on a reduced dim). An odometer steps the outer dims. */
static void mean_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const MeanJob *j = ctx;
    const MeanParams *p = j->p;
    int32_t *sum = (int32_t *)scratch;
    const uint32_t last = p->rank - 1, inner = p->dims[last];
    const int64_t step = j->ostride[last];
    uint32_t idx[EMU_MAX_RANK] = {0};
    int64_t o = 0;
    uint64_t rest = (uint64_t)begin; /* begin < end: no outer dim is 0 */
    for (int d = (int)last - 1; d >= 0; d--) {
        idx[d] = (uint32_t)(rest % p->dims[d]);
        rest /= p->dims[d];
        o += (int64_t)idx[d] * j->ostride[d];
    }
    for (int64_t r = begin; r < end; r++) {
        if (p->wide)
            MEAN_ROW(int16_t);
        else
            MEAN_ROW(int8_t);
        for (int d = (int)last - 1; d >= 0; d--) {
            o += j->ostride[d];
            if (++idx[d] < p->dims[d]) break;
            o -= j->ostride[d] * p->dims[d];
            idx[d] = 0;
        }
    }
}

/* Each thread sums its rows into its own scratch, then thread 0's gathers them: integer sums,
 * so any cut gives the same totals. */
static void mean_eval(const void *params, const void *const *inputs, void *output,
                      EmuScratch *scratch) {
    const MeanParams *p = params;
    MeanJob job = {p, inputs[0], {0}};
    int64_t kept = 1;
    for (int d = (int)p->rank - 1; d >= 0; d--) {
        job.ostride[d] = p->reduced[d] ? 0 : kept;
        if (!p->reduced[d]) kept *= p->dims[d];
    }
    const int threads = emu_pool_threads(scratch->pool);
    for (int t = 0; t < threads; t++)
        memset(scratch->scratch + (size_t)t * scratch->scratch_len, 0,
               p->out_count * sizeof(int32_t));
    const uint32_t inner = p->dims[p->rank - 1];
    if (inner > 0)
        emu_parallel_for(scratch, (int64_t)(p->in_count / inner), emu_par_grain(scratch, inner),
                         mean_rows, &job);
    int32_t *sum = (int32_t *)scratch->scratch;
    for (int t = 1; t < threads; t++) {
        const int32_t *part = (const int32_t *)(scratch->scratch + (size_t)t * scratch->scratch_len);
        for (uint64_t o = 0; o < p->out_count; o++) sum[o] += part[o];
    }
    for (uint64_t o = 0; o < p->out_count; o++) {
        const int64_t shifted = sum[o] - (int64_t)p->z_in * (int64_t)p->n;
        const int64_t h = emu_mbqm_acc(shifted, p->m, p->s, p->rounding, p->wrap);
        if (p->wide)
            ((int16_t *)output)[o] = (int16_t)emu_clamp(h, -32768, 32767);
        else
            ((int8_t *)output)[o] = (int8_t)emu_clamp(emu_add_offset(h, p->z_out, p->wrap), -128, 127);
    }
}

const EmuKernel emu_k_mean = {NEURON_MEAN, "MEAN", mean_prepare, mean_eval, mean_scratch, free};
