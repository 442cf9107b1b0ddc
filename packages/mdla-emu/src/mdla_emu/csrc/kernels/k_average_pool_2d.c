/*
 * AVERAGE_POOL_2D, int8 or int16 (16x8) (TFLite reference_integer_ops/pooling.h AveragePool).
 *
 *   acc = sum of the raw int8 taps inside the image,  n = their count (padding excluded)
 *   out = clamp(acc > 0 ? (acc + n/2) / n : (acc - n/2) / n, act_min, act_max)
 *         (C truncating division: round half away from zero)
 * Input and output share scale and zero point (no requantization). |acc| <= 2^15 * KH * KW.
 */
#include <string.h>

#include "kernels.h"

static int avg_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    (void)num;
    return emu_pooling_prepare(m, op, out);
}

static size_t avg_scratch(const void *params) {
    return (size_t)((const EmuPoolingParams *)params)->c * sizeof(int32_t);
}

/* Output rows [begin, end) of the n * oh rows, with this thread's channel sums. */
static void avg_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const EmuPoolJob *j = ctx;
    const EmuPoolingParams *p = j->p;
    const EmuWindow *w = &p->win;
    int32_t *acc = (int32_t *)scratch;
    for (int64_t row = begin; row < end; row++) {
        const int32_t b = (int32_t)(row / p->oh), oy = (int32_t)(row % p->oh);
        int32_t ys, ye, xs, xe;
        emu_window_span(oy, w->stride_h, w->pad_top, w->filter_h, p->h, &ys, &ye);
        for (int32_t ox = 0; ox < p->ow; ox++) {
            emu_window_span(ox, w->stride_w, w->pad_left, w->filter_w, p->w, &xs, &xe);
            memset(acc, 0, (size_t)p->c * sizeof *acc);
            for (int32_t iy = ys; iy < ye; iy++)
                for (int32_t ix = xs; ix < xe; ix++) {
                    const size_t at = (((size_t)b * p->h + iy) * p->w + ix) * p->c;
                    if (p->wide) {
                        const int16_t *src = (const int16_t *)j->in + at;
                        for (int32_t c = 0; c < p->c; c++) acc[c] += src[c];
                    } else {
                        const int8_t *src = (const int8_t *)j->in + at;
                        for (int32_t c = 0; c < p->c; c++) acc[c] += src[c];
                    }
                }
            const int32_t n = (ye - ys) * (xe - xs);
            const size_t at = (((size_t)b * p->oh + oy) * p->ow + ox) * p->c;
            for (int32_t c = 0; c < p->c; c++) {
                const int32_t a = acc[c];
                const int32_t avg = emu_clamp(a > 0 ? (a + n / 2) / n : (a - n / 2) / n, p->lo, p->hi);
                if (p->wide)
                    ((int16_t *)j->out)[at + c] = (int16_t)avg;
                else
                    ((int8_t *)j->out)[at + c] = (int8_t)avg;
            }
        }
    }
}

static void avg_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    emu_pooling_run(params, inputs[0], output, scratch, avg_rows);
}

const EmuKernel emu_k_average_pool_2d = {NEURON_AVERAGE_POOL_2D, "AVERAGE_POOL_2D", avg_prepare,
                                         avg_eval, avg_scratch, free};
