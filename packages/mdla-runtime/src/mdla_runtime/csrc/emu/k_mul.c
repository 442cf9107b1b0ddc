/*
 * MUL, int8 with numpy broadcasting (TFLite reference_integer_ops/mul.h).
 *
 *     (M, s) = QuantizeMultiplier(s1 * s2 / s_out)            in double, from float32 scales
 *     out = clamp(MBQM((x1 - z1) * (x2 - z2), M, s) + z_out, act_min, act_max)
 * |x - z| <= 255, so the product is below 2^16 and x * 2^s stays within int32 for s <= 15.
 */
#include "kernels.h"

typedef struct {
    EmuBroadcast bc;
    int64_t m;
    int s, rounding;
    int32_t z1, z2, z_out, lo, hi;
} MulParams;

static int mul_prepare(const NeuronModel *m, const EmuOperation *op, int rounding, void **out) {
    *out = NULL;
    const EmuOperand *x1 = &m->opnds[op->in[0]], *x2 = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    int32_t fuse = 0;
    EMU_CHECK(emu_scalar_i32(m, op->in[2], &fuse) == NEURON_NO_ERROR && fuse >= 0 && fuse <= 3);
    EMU_CHECK(emu_is_int8_act(y->type));
    MulParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    if (emu_broadcast_prepare(x1, x2, y, &p->bc) != NEURON_NO_ERROR) {
        free(p);
        return NEURON_BAD_DATA;
    }
    if (!emu_quantize_multiplier((double)x1->scale * (double)x2->scale / (double)y->scale,
                                 rounding, &p->m, &p->s)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    p->rounding = rounding;
    p->z1 = x1->zero_point;
    p->z2 = x2->zero_point;
    p->z_out = y->zero_point;
    emu_activation_range(fuse, y->scale, y->zero_point, &p->lo, &p->hi);
    *out = p;
    return NEURON_NO_ERROR;
}

static void mul_run(const void *ctx, const int8_t *a, const int8_t *b, int8_t *out,
                    uint32_t count, uint32_t a_step, uint32_t b_step) {
    const MulParams *p = ctx;
    for (uint32_t i = 0; i < count; i++) {
        const int64_t prod = (int64_t)(a[i * a_step] - p->z1) * (b[i * b_step] - p->z2);
        out[i] = (int8_t)emu_clamp(emu_mbqm(prod, p->m, p->s, p->rounding) + p->z_out, p->lo,
                                   p->hi);
    }
}

static void mul_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    (void)scratch;
    const MulParams *p = params;
    emu_broadcast_run(&p->bc, p, inputs[0], inputs[1], output, mul_run);
}

const EmuKernel emu_k_mul = {NEURON_MUL, "MUL", mul_prepare, mul_eval, NULL, free};
