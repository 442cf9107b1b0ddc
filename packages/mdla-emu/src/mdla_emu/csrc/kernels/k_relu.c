/*
 * RELU, RELU1 and RELU6 as standalone int8 ops (TFLite activations.cc QuantizedReluX).
 *
 *     (M, s) = QuantizeMultiplier((double)(float)(s_in / s_out))    a float32 division, as in C
 *     lo = max(-128, z_out + roundf(floor / s_out)),  floor = 0 (RELU, RELU6) or -1 (RELU1)
 *     hi = 127 (RELU) or min(127, z_out + roundf(ceiling / s_out)), ceiling = 6 or 1
 *     out = clamp(z_out + MBQM(x - z_in, M, s), lo, hi)
 * Frozen into a 256-entry table: every int8 code is computed once at prepare.
 */
#include "kernels.h"

static int relu_x_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                          float floor_v, float ceiling, bool capped, void **out) {
    EmuLut *lut = NULL;
    int rc = emu_lut_alloc(m, op, &lut);
    *out = NULL;
    if (rc != NEURON_NO_ERROR) return rc;
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    int64_t mult;
    int shift;
    if (!emu_quantize_multiplier((double)(x->scale / y->scale), num.rounding, &mult, &shift)) {
        free(lut);
        return NEURON_BAD_DATA;
    }
    const int32_t q_floor = emu_quantize_bound(floor_v, y->scale, y->zero_point);
    const int32_t lo = q_floor > -128 ? q_floor : -128;
    int32_t hi = 127;
    if (capped) { /* 6 / FLT_MIN is +inf in float32: emu_quantize_bound saturates it */
        const int32_t q_ceil = emu_quantize_bound(ceiling, y->scale, y->zero_point);
        hi = q_ceil < 127 ? q_ceil : 127;
    }
    const bool wrap = num.wrap;
    for (int q = -128; q < 128; q++) {
        const int64_t h = emu_mbqm_acc(q - x->zero_point, mult, shift, num.rounding, wrap);
        const int64_t v = emu_add_offset(h, y->zero_point, wrap);
        lut->table[q + 128] = (int8_t)emu_clamp(v, lo, hi);
    }
    *out = lut;
    return NEURON_NO_ERROR;
}

static int relu_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics r, void **out) {
    return relu_x_prepare(m, op, r, 0.0f, 0.0f, false, out);
}
static int relu1_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics r, void **out) {
    return relu_x_prepare(m, op, r, -1.0f, 1.0f, true, out);
}
static int relu6_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics r, void **out) {
    return relu_x_prepare(m, op, r, 0.0f, 6.0f, true, out);
}

const EmuKernel emu_k_relu = {NEURON_RELU, "RELU", relu_prepare, emu_lut_eval, NULL, free};
const EmuKernel emu_k_relu1 = {NEURON_RELU1, "RELU1", relu1_prepare, emu_lut_eval, NULL, free};
const EmuKernel emu_k_relu6 = {NEURON_RELU6, "RELU6", relu6_prepare, emu_lut_eval, NULL, free};
