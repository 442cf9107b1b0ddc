/*
 * LOGISTIC and TANH, int8 through a 256-entry table built in float32 (TFLite LUTPopulate).
 *
 *     x = (float)s_in * (float)(q - z_in)
 *     t = 1 / (1 + expf(-x))   (LOGISTIC)   or   tanhf(x)   (TANH)
 *     table[q] = clamp((int)roundf(t * (1.0f / s_out)) + z_out)        q in [-128, 127]
 * Output parameters are fixed by the int8 spec: LOGISTIC (1/256, -128), TANH (1/128, 0).
 * Built with -ffp-contract=off so no step is fused into an FMA (bit-exact to LiteRT's table).
 */
#include "kernels.h"

static int lut_prepare(const NeuronModel *m, const EmuOperation *op, bool logistic, void **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    if (logistic) {
        EMU_CHECK(y->scale == 1.0f / 256.0f && y->zero_point == -128);
    } else {
        EMU_CHECK(y->scale == 1.0f / 128.0f && y->zero_point == 0);
    }
    EmuLut *lut = NULL;
    int rc = emu_lut_alloc(m, op, &lut);
    if (rc != NEURON_NO_ERROR) return rc;
    const float inv = 1.0f / y->scale;
    for (int q = -128; q < 128; q++) {
        const float v = x->scale * (float)(q - x->zero_point);
        const float t = logistic ? 1.0f / (1.0f + expf(-v)) : tanhf(v);
        const float r = emu_round_awayf(t * inv);
        lut->table[q + 128] = (int8_t)emu_clamp((int64_t)r + y->zero_point, -128, 127);
    }
    *out = lut;
    return NEURON_NO_ERROR;
}

static int logistic_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics r, void **out) {
    (void)r;
    return lut_prepare(m, op, true, out);
}
static int tanh_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics r, void **out) {
    (void)r;
    return lut_prepare(m, op, false, out);
}

const EmuKernel emu_k_logistic = {NEURON_LOGISTIC, "LOGISTIC", logistic_prepare, emu_lut_eval,
                                  NULL, free};
const EmuKernel emu_k_tanh = {NEURON_TANH, "TANH", tanh_prepare, emu_lut_eval, NULL, free};
