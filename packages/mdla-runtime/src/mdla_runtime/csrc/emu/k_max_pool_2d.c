/*
 * MAX_POOL_2D, int8 (TFLite reference_integer_ops/pooling.h MaxPool).
 *
 *   out = clamp(max of the taps inside the image, act_min, act_max)
 * Input and output share scale and zero point. Every window holds at least one image tap
 * (pads smaller than the window, checked in prepare), so the max is always of real values.
 */
#include "kernels.h"

static int max_prepare(const NeuronModel *m, const EmuOperation *op, int rounding, void **out) {
    (void)rounding;
    return emu_pooling_prepare(m, op, out);
}

static void max_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    (void)scratch;
    const EmuPoolingParams *p = params;
    const EmuWindow *w = &p->win;
    const int8_t *in = inputs[0];
    int8_t *out = output;
    for (int32_t b = 0; b < p->n; b++)
        for (int32_t oy = 0; oy < p->oh; oy++)
            for (int32_t ox = 0; ox < p->ow; ox++) {
                const int32_t y0 = oy * w->stride_h - w->pad_top, x0 = ox * w->stride_w - w->pad_left;
                const int32_t ys = y0 < 0 ? 0 : y0, xs = x0 < 0 ? 0 : x0;
                const int32_t ye = y0 + w->filter_h < p->h ? y0 + w->filter_h : p->h;
                const int32_t xe = x0 + w->filter_w < p->w ? x0 + w->filter_w : p->w;
                int8_t *dst = out + (((size_t)b * p->oh + oy) * p->ow + ox) * p->c;
                for (int32_t c = 0; c < p->c; c++) dst[c] = -128;
                for (int32_t iy = ys; iy < ye; iy++)
                    for (int32_t ix = xs; ix < xe; ix++) {
                        const int8_t *src = in + (((size_t)b * p->h + iy) * p->w + ix) * p->c;
                        for (int32_t c = 0; c < p->c; c++) dst[c] = src[c] > dst[c] ? src[c] : dst[c];
                    }
                for (int32_t c = 0; c < p->c; c++)
                    dst[c] = (int8_t)emu_clamp(dst[c], p->lo, p->hi);
            }
}

const EmuKernel emu_k_max_pool_2d = {NEURON_MAX_POOL_2D, "MAX_POOL_2D", max_prepare, max_eval,
                                     NULL, free};
