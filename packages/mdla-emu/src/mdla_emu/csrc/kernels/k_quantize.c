/*
 * QUANTIZE between int8 and int16 (the requantization QuantConfig.a16 puts where an int16
 * tensor meets an int8 one; TFLite quantize.cc, reference Requantize):
 *     (M, s) = QM(s_in / s_out)                      double, from the float32 scales
 *     out = clamp(MBQM(x - z_in, M, s) + z_out)      to the output type's full range
 * int16 operands are TENSOR_QUANT16_SYMM (zero point 0). |x - z_in| <= 2^16: within int32.
 */
#include "kernels.h"

typedef struct {
    uint64_t count;
    int64_t m;
    int s, rounding;
    int32_t z_in, z_out;
    bool wide_in, wrap; /* wide_in: int16 -> int8, else int8 -> int16 */
} QuantizeParams;

static int quantize_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                            void **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    const bool wide_in = x->type == NEURON_TENSOR_QUANT16_SYMM;
    if (wide_in ? !emu_is_int8_act(y->type) : !(emu_is_int8_act(x->type) &&
                                                 y->type == NEURON_TENSOR_QUANT16_SYMM))
        return EMU_UNSUPPORTED; /* only int8 <-> int16 */
    EMU_CHECK(emu_elements(x) == emu_elements(y) && x->rank == y->rank);
    for (uint32_t d = 0; d < x->rank; d++) EMU_CHECK(x->dims[d] == y->dims[d]);
    QuantizeParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    if (!emu_quantize_multiplier((double)x->scale / (double)y->scale, num.rounding, &p->m,
                                 &p->s)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    p->count = emu_elements(x);
    p->rounding = num.rounding;
    p->z_in = x->zero_point;
    p->z_out = y->zero_point;
    p->wide_in = wide_in;
    p->wrap = num.wrap;
    *out = p;
    return NEURON_NO_ERROR;
}

static int64_t requantize(const QuantizeParams *p, int32_t x) {
    const int64_t v = emu_mbqm_acc((int64_t)x - p->z_in, p->m, p->s, p->rounding, p->wrap);
    return emu_add_offset(v, p->z_out, p->wrap);
}

static void quantize_eval(const void *params, const void *const *inputs, void *output,
                          EmuScratch *scratch) {
    (void)scratch;
    const QuantizeParams *p = params;
    if (p->wide_in) {
        const int16_t *x = inputs[0];
        int8_t *y = output;
        for (uint64_t i = 0; i < p->count; i++) y[i] = (int8_t)emu_clamp(requantize(p, x[i]), -128, 127);
    } else {
        const int8_t *x = inputs[0];
        int16_t *y = output;
        for (uint64_t i = 0; i < p->count; i++)
            y[i] = (int16_t)emu_clamp(requantize(p, x[i]), -32768, 32767);
    }
}

const EmuKernel emu_k_quantize = {NEURON_QUANTIZE, "QUANTIZE", quantize_prepare, quantize_eval,
                                  NULL, free};
