/*
 * FULLY_CONNECTED, int8 (TFLite reference_integer_ops/fully_connected.h).
 *
 *   acc[b, o] = bias[o] + sum_i w[o, i] * (x[b, i] - z_in)        (input flattened to [B, I])
 *   double:  out = clamp(round_half_away((double)acc * (s_in * s_w[o] / s_out)) + z_out)
 *   single:  out = clamp(MBQM_single(acc, M_o, s_o) + z_out)
 *
 * "double" follows LiteRT's BUILTIN_REF (and mdla_quant), which requantizes FULLY_CONNECTED in
 * float64 since 2025-04 instead of gemmlowp double rounding. Weights (O, I), per-tensor or
 * per-channel on dim 0. The output is [B, O] or keeps the input's leading dims ([..., O]).
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    int32_t batch, in, units;
    int32_t z_in;
    int16_t *weights; /* [units][in] */
    double *real;     /* s_in * s_w[o] / s_out (double rounding) */
    EmuRequant rq;
} FcParams;

static void fc_release(void *params) {
    FcParams *p = params;
    if (p == NULL) return;
    free(p->weights);
    free(p->real);
    emu_requant_free(&p->rq);
    free(p);
}

static int fc_fill(const NeuronModel *m, const EmuOperation *op, int rounding, FcParams *p) {
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    int32_t fuse = 0;
    EMU_CHECK(emu_scalar_i32(m, op->in[3], &fuse) == NEURON_NO_ERROR && fuse >= 0 && fuse <= 3);
    EMU_CHECK(x->rank >= 2 && f->rank == 2 && f->has_value && f->dims[1] <= 65536);
    const uint64_t elements = emu_elements(x);
    EMU_CHECK(elements % f->dims[1] == 0);
    p->in = (int32_t)f->dims[1];
    p->units = (int32_t)f->dims[0];
    p->batch = (int32_t)(elements / f->dims[1]);
    EMU_CHECK(y->rank >= 1 && y->dims[y->rank - 1] == f->dims[0] &&
              emu_elements(y) == (uint64_t)p->batch * p->units);
    p->z_in = x->zero_point;
    int rc = emu_requant_prepare(m, op->in[0], op->in[1], op->in[2], op->out[0], p->units, 0, fuse,
                                 rounding, &p->rq);
    if (rc != NEURON_NO_ERROR) return rc;
    p->weights = malloc((size_t)p->units * p->in * sizeof *p->weights);
    p->real = malloc((size_t)p->units * sizeof *p->real);
    if (p->weights == NULL || p->real == NULL) return NEURON_OUT_OF_MEMORY;
    const int8_t *wv = f->value;
    for (size_t i = 0; i < (size_t)p->units * p->in; i++) p->weights[i] = wv[i];
    for (int32_t o = 0; o < p->units; o++) {
        const float s_w = f->channel_count ? f->channel_scales[o] : f->scale;
        p->real[o] = (double)x->scale * (double)s_w / (double)y->scale;
    }
    return NEURON_NO_ERROR;
}

static int fc_prepare(const NeuronModel *m, const EmuOperation *op, int rounding, void **out) {
    FcParams *p = calloc(1, sizeof *p);
    *out = NULL;
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    int rc = fc_fill(m, op, rounding, p);
    if (rc != NEURON_NO_ERROR) {
        fc_release(p);
        return rc;
    }
    *out = p;
    return NEURON_NO_ERROR;
}

/* Scratch: the input row (int16), then the accumulators (int32) at the next 64-byte boundary;
 * straight after an odd-length row they would sit 2 bytes off int32 alignment. */
static size_t fc_acc_offset(const FcParams *p) {
    return ((size_t)p->in * sizeof(int16_t) + 63) / 64 * 64;
}

static size_t fc_scratch(const void *params) {
    const FcParams *p = params;
    return fc_acc_offset(p) + (size_t)p->units * sizeof(int32_t);
}

static void fc_eval(const void *params, const void *const *inputs, void *output,
                    EmuScratch *scratch) {
    const FcParams *p = params;
    const int8_t *x = inputs[0];
    int8_t *out = output;
    int16_t *row = (int16_t *)scratch->scratch;
    int32_t *acc = (int32_t *)(scratch->scratch + fc_acc_offset(p));
    for (int32_t b = 0; b < p->batch; b++) {
        const int8_t *xb = x + (size_t)b * p->in;
        for (int32_t i = 0; i < p->in; i++) row[i] = (int16_t)(xb[i] - p->z_in);
        emu_gemm_s16(row, p->weights, acc, 1, p->units, p->in);
        int8_t *ob = out + (size_t)b * p->units;
        if (p->rq.rounding == EMU_ROUND_SINGLE) {
            emu_requant_row(&p->rq, acc, ob);
            continue;
        }
        for (int32_t o = 0; o < p->units; o++) {
            const int64_t v = (int64_t)acc[o] + p->rq.bias[o];
            const double r = emu_round_away((double)v * p->real[o]);
            const double q = r + (double)p->rq.z_out; /* |r| can exceed int32: clamp in double */
            ob[o] = (int8_t)(q < p->rq.lo ? p->rq.lo : (q > p->rq.hi ? p->rq.hi : (int32_t)q));
        }
    }
}

const EmuKernel emu_k_fully_connected = {NEURON_FULLY_CONNECTED, "FULLY_CONNECTED", fc_prepare,
                                         fc_eval, fc_scratch, fc_release};
