/*
 * MAX_POOL_2D, int8 or int16 (16x8) (TFLite reference_integer_ops/pooling.h MaxPool).
 *
 *   out = clamp(max of the taps inside the image, act_min, act_max)
 * Input and output share scale and zero point. Every window holds at least one image tap
 * (pads smaller than the window, checked in prepare), so the max is always of real values.
 * clamp(max(taps), lo, hi) = min(max(lo, taps...), hi): the running max starts at lo.
 */
#include "kernels.h"

static int max_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    (void)num;
    return emu_pooling_prepare(m, op, out);
}

/* Output rows [begin, end) of the n * oh rows. Per output pixel the window's rows and columns
 * inside the image are fixed first; the channel loops then run branch-free over contiguous
 * int8 (restrict: input and output never overlap), which the compiler vectorizes. */
EMU_BODY void max_rows(const EmuPoolingParams *p, const int8_t *restrict in,
                       int8_t *restrict out, int64_t begin, int64_t end) {
    const EmuWindow *w = &p->win;
    const int32_t c = p->c;
    const int8_t lo = (int8_t)p->lo, hi = (int8_t)p->hi; /* within [-128, 127] */
    for (int64_t row = begin; row < end; row++) {
        const int32_t b = (int32_t)(row / p->oh), oy = (int32_t)(row % p->oh);
        int32_t ys, ye, xs, xe;
        emu_window_span(oy, w->stride_h, w->pad_top, w->filter_h, p->h, &ys, &ye);
        for (int32_t ox = 0; ox < p->ow; ox++) {
            emu_window_span(ox, w->stride_w, w->pad_left, w->filter_w, p->w, &xs, &xe);
            int8_t *restrict dst = out + (((size_t)b * p->oh + oy) * p->ow + ox) * c;
            for (int32_t k = 0; k < c; k++) dst[k] = lo; /* max(v, lo) clamps from below */
            for (int32_t iy = ys; iy < ye; iy++)
                for (int32_t ix = xs; ix < xe; ix++) {
                    const int8_t *restrict src = in + (((size_t)b * p->h + iy) * p->w + ix) * c;
                    for (int32_t k = 0; k < c; k++) dst[k] = src[k] > dst[k] ? src[k] : dst[k];
                }
            for (int32_t k = 0; k < c; k++) dst[k] = dst[k] < hi ? dst[k] : hi;
        }
    }
}

EMU_DISPATCHED((const EmuPoolingParams *p, const int8_t *in, int8_t *out, int64_t begin,
                int64_t end),
               max_rows, (p, in, out, begin, end))

/* The int16 rows (16x8): the same walk, one plain loop. */
static void max_rows16(const EmuPoolingParams *p, const int16_t *in, int16_t *out,
                       int64_t begin, int64_t end) {
    const EmuWindow *w = &p->win;
    const int32_t c = p->c;
    for (int64_t row = begin; row < end; row++) {
        const int32_t b = (int32_t)(row / p->oh), oy = (int32_t)(row % p->oh);
        int32_t ys, ye, xs, xe;
        emu_window_span(oy, w->stride_h, w->pad_top, w->filter_h, p->h, &ys, &ye);
        for (int32_t ox = 0; ox < p->ow; ox++) {
            emu_window_span(ox, w->stride_w, w->pad_left, w->filter_w, p->w, &xs, &xe);
            int16_t *dst = out + (((size_t)b * p->oh + oy) * p->ow + ox) * c;
            for (int32_t k = 0; k < c; k++) dst[k] = (int16_t)p->lo;
            for (int32_t iy = ys; iy < ye; iy++)
                for (int32_t ix = xs; ix < xe; ix++) {
                    const int16_t *src = in + (((size_t)b * p->h + iy) * p->w + ix) * c;
                    for (int32_t k = 0; k < c; k++) dst[k] = src[k] > dst[k] ? src[k] : dst[k];
                }
            for (int32_t k = 0; k < c; k++) dst[k] = dst[k] < p->hi ? dst[k] : (int16_t)p->hi;
        }
    }
}

static void max_task(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const EmuPoolJob *j = ctx;
    if (j->p->wide) {
        max_rows16(j->p, j->in, j->out, begin, end);
        return;
    }
    const int8_t *in = j->in;
    int8_t *out = j->out;
    EMU_CALL(max_rows, (j->p, in, out, begin, end));
}

static void max_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    emu_pooling_run(params, inputs[0], output, scratch, max_task);
}

const EmuKernel emu_k_max_pool_2d = {NEURON_MAX_POOL_2D, "MAX_POOL_2D", max_prepare, max_eval,
                                     NULL, free};
