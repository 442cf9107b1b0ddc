/*
 * DEPTH_TO_SPACE, int8 NHWC (TFLite reference_ops::DepthToSpace).
 *
 *     out[n, h*r + i, w*r + j, c] = in[n, h, w, (i*r + j)*C + c]     C = in channels / r^2
 * Codes move unchanged: input and output share scale and zero point.
 * Operands: input, block size r (i32), [NCHW bool].
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    int32_t n, h, w, c, r; /* c: output channels */
} D2sParams;

static int d2s_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    (void)num;
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    bool nchw = false;
    if (op->n_in > 2) EMU_CHECK(emu_scalar_bool(m, op->in[2], &nchw) == NEURON_NO_ERROR);
    if (nchw) return EMU_UNSUPPORTED; /* the emulator computes NHWC only */
    EMU_CHECK(x->rank == 4 && emu_is_int8_act(y->type) && emu_same_quant(x, y));
    int32_t r = 0;
    EMU_CHECK(emu_scalar_i32(m, op->in[1], &r) == NEURON_NO_ERROR && r >= 1 && r <= 256);
    EMU_CHECK(x->dims[3] % (uint32_t)(r * r) == 0);
    const uint32_t want[4] = {x->dims[0], x->dims[1] * (uint32_t)r, x->dims[2] * (uint32_t)r,
                              x->dims[3] / (uint32_t)(r * r)};
    EMU_CHECK(emu_dims_are(y, 4, want));
    D2sParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    p->n = (int32_t)x->dims[0];
    p->h = (int32_t)x->dims[1];
    p->w = (int32_t)x->dims[2];
    p->c = (int32_t)want[3];
    p->r = r;
    *out = p;
    return NEURON_NO_ERROR;
}

static void d2s_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    (void)scratch;
    const D2sParams *p = params;
    const int8_t *x = inputs[0];
    int8_t *out = output;
    const size_t c = (size_t)p->c, r = (size_t)p->r, ow = (size_t)p->w * r;
    for (size_t b = 0; b < (size_t)p->n; b++)
        for (size_t h = 0; h < (size_t)p->h; h++)
            for (size_t w = 0; w < (size_t)p->w; w++) {
                const int8_t *src = x + ((b * p->h + h) * p->w + w) * c * r * r;
                for (size_t i = 0; i < r; i++)
                    for (size_t j = 0; j < r; j++) {
                        int8_t *dst = out + ((b * p->h * r + h * r + i) * ow + w * r + j) * c;
                        memcpy(dst, src + (i * r + j) * c, c);
                    }
            }
}

const EmuKernel emu_k_depth_to_space = {NEURON_DEPTH_TO_SPACE, "DEPTH_TO_SPACE", d2s_prepare,
                                        d2s_eval, NULL, free};
