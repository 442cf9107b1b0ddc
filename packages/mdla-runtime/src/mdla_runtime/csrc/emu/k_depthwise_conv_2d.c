/*
 * DEPTHWISE_CONV_2D, int8 per-channel (TFLite reference_integer_ops/depthwise_conv.h).
 *
 *   acc[n,y,x,c*m+k] = sum_{i,j} w[0,i,j,c*m+k] * (in[n, y*sh + i*dh - t, x*sw + j*dw - l, c] - z_in)
 *                      (taps outside the image are skipped)
 *   out = clamp(MBQM(acc + bias[c*m+k], M_ck, s_ck) + z_out, act_min, act_max)
 *
 * Loops: per output pixel, per tap inside the image, one pass over the contiguous channels
 * (the filter (1,KH,KW,C*m) is [tap][C*m], the input row [C]). Bounds: |acc| <= KH*KW*255*127.
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    int32_t n, h, w, ci, oh, ow, co, mult;
    EmuWindow win;
    int32_t z_in;
    int16_t *filter; /* [KH*KW][co] */
    EmuRequant rq;
} DwParams;

static void dw_release(void *params) {
    DwParams *p = params;
    if (p == NULL) return;
    free(p->filter);
    emu_requant_free(&p->rq);
    free(p);
}

static int dw_fill(const NeuronModel *m, const EmuOperation *op, int rounding, DwParams *p) {
    EmuWindow win;
    EMU_CHECK(emu_window(m, op, &win) == NEURON_NO_ERROR);
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    EMU_CHECK(x->rank == 4 && f->rank == 4 && f->dims[0] == 1 && f->has_value);
    EMU_CHECK(f->dims[3] == x->dims[3] * (uint32_t)win.multiplier);
    const int32_t oh = emu_out_size((int32_t)x->dims[1], win.filter_h, win.stride_h,
                                    win.dilation_h, win.pad_top, win.pad_bottom);
    const int32_t ow = emu_out_size((int32_t)x->dims[2], win.filter_w, win.stride_w,
                                    win.dilation_w, win.pad_left, win.pad_right);
    EMU_CHECK(oh > 0 && ow > 0);
    const uint32_t want[4] = {x->dims[0], (uint32_t)oh, (uint32_t)ow, f->dims[3]};
    EMU_CHECK(emu_dims_are(y, 4, want));
    p->n = (int32_t)x->dims[0];
    p->h = (int32_t)x->dims[1];
    p->w = (int32_t)x->dims[2];
    p->ci = (int32_t)x->dims[3];
    p->oh = oh;
    p->ow = ow;
    p->co = (int32_t)f->dims[3];
    p->mult = win.multiplier;
    p->win = win;
    p->z_in = x->zero_point;
    int rc = emu_requant_prepare(m, op->in[0], op->in[1], op->in[2], op->out[0], p->co, 3,
                                 win.fuse, rounding, &p->rq);
    if (rc != NEURON_NO_ERROR) return rc;
    const size_t taps = (size_t)win.filter_h * win.filter_w;
    p->filter = malloc(taps * p->co * sizeof *p->filter);
    if (p->filter == NULL) return NEURON_OUT_OF_MEMORY;
    const int8_t *wv = f->value;
    for (size_t i = 0; i < taps * p->co; i++) p->filter[i] = wv[i];
    return NEURON_NO_ERROR;
}

static int dw_prepare(const NeuronModel *m, const EmuOperation *op, int rounding, void **out) {
    DwParams *p = calloc(1, sizeof *p);
    *out = NULL;
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    int rc = dw_fill(m, op, rounding, p);
    if (rc != NEURON_NO_ERROR) {
        dw_release(p);
        return rc;
    }
    *out = p;
    return NEURON_NO_ERROR;
}

static size_t dw_scratch(const void *params) {
    const DwParams *p = params;
    return (size_t)p->co * sizeof(int32_t) + (size_t)p->co * sizeof(int16_t);
}

static void dw_eval(const void *params, const void *const *inputs, void *output,
                    EmuScratch *scratch) {
    const DwParams *p = params;
    const EmuWindow *w = &p->win;
    const int8_t *in = inputs[0];
    int8_t *out = output;
    int32_t *acc = (int32_t *)scratch->scratch;
    int16_t *xs = (int16_t *)(scratch->scratch + (size_t)p->co * sizeof(int32_t));
    for (int32_t b = 0; b < p->n; b++) {
        for (int32_t oy = 0; oy < p->oh; oy++) {
            for (int32_t ox = 0; ox < p->ow; ox++) {
                memset(acc, 0, (size_t)p->co * sizeof *acc);
                for (int32_t i = 0; i < w->filter_h; i++) {
                    const int32_t iy = oy * w->stride_h + i * w->dilation_h - w->pad_top;
                    if (iy < 0 || iy >= p->h) continue;
                    for (int32_t j = 0; j < w->filter_w; j++) {
                        const int32_t ix = ox * w->stride_w + j * w->dilation_w - w->pad_left;
                        if (ix < 0 || ix >= p->w) continue;
                        const int8_t *src = in + (((size_t)b * p->h + iy) * p->w + ix) * p->ci;
                        const int16_t *wt = p->filter + (size_t)(i * w->filter_w + j) * p->co;
                        if (p->mult == 1) {
                            for (int32_t c = 0; c < p->co; c++)
                                acc[c] += (int32_t)(int16_t)(src[c] - p->z_in) * wt[c];
                        } else {
                            for (int32_t c = 0; c < p->ci; c++)
                                for (int32_t k = 0; k < p->mult; k++) xs[c * p->mult + k] =
                                    (int16_t)(src[c] - p->z_in);
                            for (int32_t c = 0; c < p->co; c++) acc[c] += (int32_t)xs[c] * wt[c];
                        }
                    }
                }
                emu_requant_row(&p->rq, acc, out + (((size_t)b * p->oh + oy) * p->ow + ox) * p->co);
            }
        }
    }
}

const EmuKernel emu_k_depthwise_conv_2d = {NEURON_DEPTHWISE_CONV_2D, "DEPTHWISE_CONV_2D",
                                           dw_prepare, dw_eval, dw_scratch, dw_release};
