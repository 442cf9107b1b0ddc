/*
 * TRANSPOSE_CONV_2D, int8 per-channel (TFLite reference_integer_ops/transpose_conv.h).
 *
 *     acc_full[n, y*sh + i, x*sw + j, o] += sum_c w[o, i, j, c] * (in[n, y, x, c] - z_in)
 *     acc[n, oy, ox, o] = acc_full[n, oy + pad_top, ox + pad_left, o]   (the pads crop)
 *     out = clamp(MBQM(acc + bias[o], M_o, s_o) + z_out, act_min, act_max)
 *     (M_o, s_o) = QuantizeMultiplier(s_in * s_w[o] / s_out)            as CONV_2D
 * Operands, explicit form (the one lowering writes): input, filter (O, KH, KW, I), bias,
 * pad left, right, top, bottom, stride w, h, fuse, NCHW bool. Implicit form (NNAPI's, what
 * LiteRT sends): input, filter, bias, output shape (TENSOR_INT32 [4]), padding code, stride w,
 * h, fuse, NCHW bool; per axis the pads crop total = (in - 1) * stride + k - out positions,
 * none for VALID, total / 2 before and the rest after for SAME (TFLite's padding of the output
 * shape it was given). NCHW is a form the emulator does not compute (EMU_UNSUPPORTED).
 * |acc| <= KH*KW*I * 255 * 128 stays in int32 for the filters emu_requant_prepare accepts.
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    int32_t n, h, w, ci, co, kh, kw, sh, sw, t, l, oh, ow, full_h, full_w, z_in;
    const int8_t *filter; /* (O, KH, KW, I), the constant operand's data */
    EmuRequant rq;
} TconvParams;

static void tconv_release(void *params) {
    TconvParams *p = params;
    if (p == NULL) return;
    emu_requant_free(&p->rq);
    free(p);
}

/* v = pad l, r, t, b, stride w, h, fuse of either form; the operands after the fuse code are
 * the layout flag. The implicit form's pads come from its output shape operand. */
static int tconv_geometry(const NeuronModel *m, const EmuOperation *op, int32_t v[7]) {
    const bool implicit = op->n_in == 9;
    EMU_CHECK(op->n_in == 11 || implicit);
    const uint32_t first = implicit ? 4 : 3, n = implicit ? 4 : 7;
    int32_t raw[7];
    for (uint32_t i = 0; i < n; i++)
        EMU_CHECK(emu_scalar_i32(m, op->in[first + i], &raw[i]) == NEURON_NO_ERROR);
    bool nchw = false;
    EMU_CHECK(emu_scalar_bool(m, op->in[op->n_in - 1], &nchw) == NEURON_NO_ERROR);
    if (nchw) return EMU_UNSUPPORTED; /* the emulator computes NHWC only */
    if (!implicit) {
        memcpy(v, raw, sizeof raw);
        return NEURON_NO_ERROR;
    }
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *shape = &m->opnds[op->in[3]];
    EMU_CHECK(raw[0] == NEURON_PADDING_SAME || raw[0] == NEURON_PADDING_VALID);
    EMU_CHECK(shape->rank == 1 && shape->dims[0] == 4 && shape->has_value && !shape->omitted);
    EMU_CHECK(x->rank == 4 && f->rank == 4 && raw[1] >= 1 && raw[2] >= 1);
    EMU_CHECK(raw[1] <= 65535 && raw[2] <= 65535 && f->dims[1] <= 65535 && f->dims[2] <= 65535);
    int32_t out[4];
    memcpy(out, shape->value, sizeof out);
    for (int d = 0; d < 4; d++) EMU_CHECK(out[d] >= 1);
    const uint32_t given[4] = {(uint32_t)out[0], (uint32_t)out[1], (uint32_t)out[2],
                               (uint32_t)out[3]};
    EMU_CHECK(emu_dims_are(&m->opnds[op->out[0]], 4, given));
    const int64_t size[2] = {x->dims[2], x->dims[1]}, k[2] = {f->dims[2], f->dims[1]};
    for (int a = 0; a < 2; a++) { /* a = 0: width (pads l, r), 1: height (t, b) */
        EMU_CHECK(size[a] <= 65535);
        int64_t total = (size[a] - 1) * raw[1 + a] + k[a] - out[2 - a];
        if (raw[0] == NEURON_PADDING_VALID || total < 0) total = 0;
        v[2 * a] = (int32_t)(total / 2);
        v[2 * a + 1] = (int32_t)(total - total / 2);
    }
    v[4] = raw[1];
    v[5] = raw[2];
    v[6] = raw[3];
    return NEURON_NO_ERROR;
}

static int tconv_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                         void **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    int32_t v[7]; /* pad l, r, t, b, stride w, h, fuse */
    const int geometry = tconv_geometry(m, op, v);
    if (geometry != NEURON_NO_ERROR) return geometry;
    EMU_CHECK(x->rank == 4 && f->rank == 4 && f->dims[3] == x->dims[3] && f->value != NULL);
    EMU_CHECK(v[0] >= 0 && v[1] >= 0 && v[2] >= 0 && v[3] >= 0 && v[4] >= 1 && v[5] >= 1);
    EMU_CHECK(v[4] <= 65535 && v[5] <= 65535 && v[6] >= 0 && v[6] <= 3);
    EMU_CHECK(f->dims[1] <= 65535 && f->dims[2] <= 65535 && x->dims[1] <= 65535 &&
              x->dims[2] <= 65535);
    const int64_t full_h = ((int64_t)x->dims[1] - 1) * v[5] + f->dims[1];
    const int64_t full_w = ((int64_t)x->dims[2] - 1) * v[4] + f->dims[2];
    const int64_t oh = full_h - v[2] - v[3], ow = full_w - v[0] - v[1];
    EMU_CHECK(oh >= 1 && ow >= 1 && full_h <= 65535 && full_w <= 65535);
    const uint32_t want[4] = {x->dims[0], (uint32_t)oh, (uint32_t)ow, f->dims[0]};
    EMU_CHECK(emu_dims_are(y, 4, want));
    TconvParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    int rc = emu_requant_prepare(m, op->in[0], op->in[1], op->in[2], op->out[0],
                                 (int32_t)f->dims[0], 0, v[6], num, &p->rq);
    if (rc != NEURON_NO_ERROR) {
        free(p);
        return rc;
    }
    p->n = (int32_t)x->dims[0];
    p->h = (int32_t)x->dims[1];
    p->w = (int32_t)x->dims[2];
    p->ci = (int32_t)x->dims[3];
    p->co = (int32_t)f->dims[0];
    p->kh = (int32_t)f->dims[1];
    p->kw = (int32_t)f->dims[2];
    p->sw = v[4];
    p->sh = v[5];
    p->l = v[0];
    p->t = v[2];
    p->oh = (int32_t)oh;
    p->ow = (int32_t)ow;
    p->full_h = (int32_t)full_h;
    p->full_w = (int32_t)full_w;
    p->z_in = x->zero_point;
    p->filter = f->value;
    *out = p;
    return NEURON_NO_ERROR;
}

static size_t tconv_scratch(const void *params) {
    const TconvParams *p = params;
    return (size_t)p->full_h * p->full_w * p->co * sizeof(int32_t);
}

static void tconv_eval(const void *params, const void *const *inputs, void *output,
                       EmuScratch *scratch) {
    const TconvParams *p = params;
    const int8_t *x = inputs[0];
    int8_t *out = output;
    int32_t *acc = (int32_t *)scratch->scratch;
    const size_t co = (size_t)p->co, ci = (size_t)p->ci, row = (size_t)p->full_w * co;
    for (int32_t b = 0; b < p->n; b++) {
        memset(acc, 0, (size_t)p->full_h * row * sizeof *acc);
        for (int32_t iy = 0; iy < p->h; iy++)
            for (int32_t ix = 0; ix < p->w; ix++) {
                const int8_t *src = x + (((size_t)b * p->h + iy) * p->w + ix) * ci;
                for (int32_t i = 0; i < p->kh; i++)
                    for (int32_t j = 0; j < p->kw; j++) {
                        int32_t *dst = acc + (size_t)(iy * p->sh + i) * row +
                                       (size_t)(ix * p->sw + j) * co;
                        for (size_t o = 0; o < co; o++) {
                            const int8_t *w = p->filter + ((o * p->kh + i) * p->kw + j) * ci;
                            int32_t s = 0;
                            for (size_t c = 0; c < ci; c++) s += (src[c] - p->z_in) * w[c];
                            dst[o] += s;
                        }
                    }
            }
        for (int32_t oy = 0; oy < p->oh; oy++)
            emu_requant_rows(&p->rq, acc + (size_t)(oy + p->t) * row + (size_t)p->l * co, co,
                             out + (((size_t)b * p->oh + oy) * p->ow) * co, p->ow);
    }
}

const EmuKernel emu_k_transpose_conv_2d = {NEURON_TRANSPOSE_CONV_2D, "TRANSPOSE_CONV_2D",
                                           tconv_prepare, tconv_eval, tconv_scratch,
                                           tconv_release};
