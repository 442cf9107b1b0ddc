/*
 * PRELU, int8 with alpha broadcast to the input (TFLite reference_ops::BroadcastPrelu4DSlow,
 * activations.cc PreluPrepare). A LeakyReLU is PRELU with a one-element constant alpha.
 *
 * Prepare (float32 products, then QuantizeMultiplier):
 *     (M1, e1) = QM(s_in / s_out),  (M2, e2) = QM(s_in * s_alpha / s_out)
 * Eval:
 *     v = x - z_in
 *     v >= 0: out = MBQM(v, M1, e1) + z_out
 *     v <  0: out = MBQM(v * (alpha - z_alpha), M2, e2) + z_out
 *     out = clamp(out, -128, 127)
 * out depends on the two int8 codes only, so prepare freezes it into a 256 x 256 table.
 * |v| <= 255 and |alpha - z_alpha| <= 255: the product is below 2^16, within int32.
 *
 * 16x8 (input and output TENSOR_QUANT16_SYMM, zero point 0): the same formula with alpha int8
 * (LiteRT's int16 PRELU reads alpha as int8 codes, whatever its tensor type), clamped to int16;
 * |v| <= 2^15, so the product is below 2^23. Alpha must be constant: prepare widens its codes
 * minus z_alpha to int16 (the broadcast's element size is the output's), and eval computes each
 * element.
 */
#include "kernels.h"

typedef struct {
    EmuBroadcast bc;
    int8_t out[256][256]; /* indexed by (input code + 128, alpha code + 128) */
    int16_t *alpha16;     /* 16x8: alpha's codes minus z_alpha; NULL for int8 */
    int64_t m1, m2;
    int e1, e2, rounding;
    bool wrap;
} PreluParams;

static void prelu_release(void *params) {
    PreluParams *p = params;
    if (p != NULL) free(p->alpha16);
    free(p);
}

/* The 16x8 form's prepare (the header's second part). */
static int prelu16_prepare(const EmuOperand *a, PreluParams *p) {
    EMU_CHECK(a->has_value && a->value != NULL);
    const uint64_t n = emu_elements(a);
    p->alpha16 = malloc((n > 0 ? n : 1) * sizeof *p->alpha16);
    if (p->alpha16 == NULL) return NEURON_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < n; i++)
        p->alpha16[i] = (int16_t)(((const int8_t *)a->value)[i] - a->zero_point);
    return NEURON_NO_ERROR;
}

static int prelu_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                         void **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *a = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    const bool wide = x->type == NEURON_TENSOR_QUANT16_SYMM && y->type == x->type;
    EMU_CHECK((wide || (emu_is_int8_act(x->type) && emu_is_int8_act(y->type))) &&
              emu_is_int8_act(a->type));
    EMU_CHECK(x->scale > 0.0f && a->scale > 0.0f && y->scale > 0.0f);
    EMU_CHECK(!wide || (x->zero_point == 0 && y->zero_point == 0));
    EMU_CHECK(emu_dims_are(y, x->rank, x->dims)); /* alpha broadcasts to x, never x to alpha */
    PreluParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    if (emu_broadcast_prepare(x, a, y, &p->bc) != NEURON_NO_ERROR) {
        free(p);
        return NEURON_BAD_DATA;
    }
    const float real1 = x->scale / y->scale;
    const float product = x->scale * a->scale;
    const float real2 = product / y->scale;
    int64_t m1, m2;
    int e1, e2;
    if (!emu_quantize_multiplier((double)real1, num.rounding, &m1, &e1) ||
        !emu_quantize_multiplier((double)real2, num.rounding, &m2, &e2)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    const bool wrap = num.wrap;
    p->m1 = m1, p->m2 = m2, p->e1 = e1, p->e2 = e2, p->rounding = num.rounding, p->wrap = wrap;
    if (wide) {
        const int rc = prelu16_prepare(a, p);
        if (rc != NEURON_NO_ERROR) {
            prelu_release(p);
            return rc;
        }
        *out = p;
        return NEURON_NO_ERROR;
    }
    for (int i = 0; i < 256; i++) {
        const int64_t v = (int64_t)(i - 128) - x->zero_point;
        for (int j = 0; j < 256; j++) {
            const int64_t alpha = (int64_t)(j - 128) - a->zero_point;
            const int64_t r = v >= 0 ? emu_mbqm_acc(v, m1, e1, num.rounding, wrap)
                                     : emu_mbqm_acc(v * alpha, m2, e2, num.rounding, wrap);
            p->out[i][j] = (int8_t)emu_clamp(emu_add_offset(r, y->zero_point, wrap), -128, 127);
        }
    }
    *out = p;
    return NEURON_NO_ERROR;
}

static void prelu_run(const void *ctx, const int8_t *x, const int8_t *a, int8_t *out,
                      uint32_t count, uint32_t x_step, uint32_t a_step) {
    const PreluParams *p = ctx;
    for (uint32_t i = 0; i < count; i++) out[i] = p->out[x[i * x_step] + 128][a[i * a_step] + 128];
}

/* The 16x8 run: x, the widened alpha and out are int16 (cast back from the broadcast's bytes). */
static void prelu16_run(const void *ctx, const int8_t *x8, const int8_t *a8, int8_t *out8,
                        uint32_t count, uint32_t x_step, uint32_t a_step) {
    const PreluParams *p = ctx;
    const int16_t *x = (const int16_t *)(const void *)x8, *a = (const int16_t *)(const void *)a8;
    int16_t *out = (int16_t *)(void *)out8;
    for (uint32_t i = 0; i < count; i++) {
        const int64_t v = x[i * x_step];
        const int64_t r = v >= 0 ? emu_mbqm_acc(v, p->m1, p->e1, p->rounding, p->wrap)
                                 : emu_mbqm_acc(v * a[i * a_step], p->m2, p->e2, p->rounding,
                                                p->wrap);
        out[i] = (int16_t)emu_clamp(r, -32768, 32767);
    }
}

static void prelu_eval(const void *params, const void *const *inputs, void *output,
                       EmuScratch *scratch) {
    const PreluParams *p = params;
    if (p->alpha16 != NULL) {
        emu_broadcast_run(&p->bc, scratch, EMU_WORK_WIDE, p, inputs[0],
                          (const int8_t *)(const void *)p->alpha16, output, prelu16_run);
        return;
    }
    emu_broadcast_run(&p->bc, scratch, EMU_WORK_TABLE2, p, inputs[0], inputs[1], output,
                      prelu_run);
}

const EmuKernel emu_k_prelu = {NEURON_PRELU, "PRELU", prelu_prepare, prelu_eval, NULL,
                               prelu_release};
