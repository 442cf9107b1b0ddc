/*
 * FULLY_CONNECTED, 16x8 (int16 activations, TENSOR_QUANT16_SYMM, zero point 0; int8 symmetric
 * weights (O, I), per-tensor or per-channel on dim 0; the int64 bias lowered as TENSOR_INT32;
 * TFLite reference_integer_ops/fully_connected.h, its int16-input template):
 *
 *   acc[b, o] = bias[o] + sum_i w[o, i] * x[b, i]                       int64 (exact)
 *   real[o]   = (s_in * s_w[o]) / s_out                                 in float32, as LiteRT
 *   out       = clamp(round_half_away((double)acc * (double)real[o]), act_min, act_max)
 *
 * LiteRT's BUILTIN_REF requantizes FULLY_CONNECTED in float64 for int16 as for int8 (the int
 * MBQM64 form differs on some elements); mdla_quant.kernels.a16_conv does the same. One plain
 * loop per output element.
 */
#include <string.h>

#include "kernels.h"

struct EmuFc16 {
    int32_t batch, in, units;
    const int8_t *weights; /* the constant operand's data, [units][in] */
    int32_t *bias;
    double *real;
    int32_t lo, hi;
};

void emu_fc16_free(EmuFc16 *p) {
    if (p == NULL) return;
    free(p->bias);
    free(p->real);
    free(p);
}

static int fc16_quant(const NeuronModel *m, const EmuOperation *op, EmuFc16 *p) {
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *b = &m->opnds[op->in[2]], *y = &m->opnds[op->out[0]];
    int32_t fuse = 0;
    EMU_CHECK(emu_scalar_i32(m, op->in[3], &fuse) == NEURON_NO_ERROR && fuse >= 0 && fuse <= 3);
    EMU_CHECK(x->zero_point == 0 && y->zero_point == 0 && x->scale > 0.0f && y->scale > 0.0f);
    const bool per_channel = f->type == NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL;
    EMU_CHECK(per_channel ? f->channel_count == (uint32_t)p->units && f->channel_dim == 0
                          : (f->zero_point == 0 && f->scale > 0.0f));
    EMU_CHECK(b->has_value &&
              (b->omitted || (b->type == NEURON_TENSOR_INT32 && b->rank == 1 &&
                              b->dims[0] == (uint32_t)p->units)));
    if (!b->omitted) memcpy(p->bias, b->value, (size_t)p->units * sizeof *p->bias);
    for (int32_t o = 0; o < p->units; o++) {
        const float s_w = per_channel ? f->channel_scales[o] : f->scale;
        const float product = x->scale * s_w; /* float32 throughout */
        const float real = product / y->scale;
        p->real[o] = (double)real;
    }
    emu_activation_range16(fuse, y->scale, &p->lo, &p->hi);
    return NEURON_NO_ERROR;
}

int emu_fc16_prepare(const NeuronModel *m, const EmuOperation *op, EmuFc16 **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    EMU_CHECK(x->type == NEURON_TENSOR_QUANT16_SYMM && y->type == NEURON_TENSOR_QUANT16_SYMM);
    EMU_CHECK(x->rank >= 2 && f->rank == 2 && f->has_value && f->dims[1] >= 1);
    const uint64_t elements = emu_elements(x);
    EMU_CHECK(elements % f->dims[1] == 0);
    const uint64_t batch = elements / f->dims[1];
    EMU_CHECK(y->rank >= 1 && y->dims[y->rank - 1] == f->dims[0] &&
              emu_elements(y) == batch * f->dims[0]);
    EmuFc16 *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    p->batch = (int32_t)batch;
    p->in = (int32_t)f->dims[1];
    p->units = (int32_t)f->dims[0];
    p->weights = f->value;
    p->bias = calloc((size_t)p->units, sizeof *p->bias);
    p->real = malloc((size_t)p->units * sizeof *p->real);
    if (p->bias == NULL || p->real == NULL) {
        emu_fc16_free(p);
        return NEURON_OUT_OF_MEMORY;
    }
    const int rc = fc16_quant(m, op, p);
    if (rc != NEURON_NO_ERROR) {
        emu_fc16_free(p);
        return rc;
    }
    *out = p;
    return NEURON_NO_ERROR;
}

void emu_fc16_eval(const EmuFc16 *p, const int16_t *in, int16_t *out) {
    for (int32_t b = 0; b < p->batch; b++) {
        const int16_t *x = in + (size_t)b * p->in;
        for (int32_t o = 0; o < p->units; o++) {
            const int8_t *w = p->weights + (size_t)o * p->in;
            int64_t acc = p->bias[o];
            for (int32_t i = 0; i < p->in; i++) acc += (int64_t)w[i] * x[i];
            const double r = emu_round_away((double)acc * p->real[o]);
            out[(size_t)b * p->units + o] =
                (int16_t)(r < p->lo ? p->lo : (r > p->hi ? p->hi : (int32_t)r));
        }
    }
}
