/*
 * RESIZE_NEAREST_NEIGHBOR, int8 or int16 (16x8) NHWC (TFLite reference_ops::ResizeNearestNeighbor).
 *
 * Per axis, in float32:  scale = (in-1)/(out-1) with align_corners and out > 1, else in/out
 *                        src = min(f((dst + o) * scale), in - 1)    o = 0.5 with half_pixel_centers
 *                        f = round (half away) with align_corners, else floor
 *                        half_pixel_centers: src = max(src, 0)
 * out[n, y, x, c] = in[n, src_y(y), src_x(x), c]; input and output share scale and zero point.
 * Operands: input, out width, out height (i32; or f32 scales: out = floor(in * scale)),
 * [NCHW bool, align_corners bool, half_pixel_centers bool].
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    EmuResize r;
    int32_t *rows, *cols; /* one allocation, oh + ow entries */
} NearestParams;

static void nearest_release(void *params) {
    NearestParams *p = params;
    if (p == NULL) return;
    free(p->rows);
    free(p);
}

static void axis(int32_t n_in, int32_t n_out, bool align, bool half, int32_t *src) {
    const float scale = align && n_out > 1 ? (float)(n_in - 1) / (float)(n_out - 1)
                                           : (float)n_in / (float)n_out;
    const float offset = half ? 0.5f : 0.0f;
    for (int32_t i = 0; i < n_out; i++) {
        const float p = ((float)i + offset) * scale;
        const float f = floorf(p); /* p >= 0; align_corners rounds half away from zero */
        int32_t s = (int32_t)(align && p - f >= 0.5f ? f + 1.0f : f);
        s = s < n_in - 1 ? s : n_in - 1;
        if (half && s < 0) s = 0;
        src[i] = s;
    }
}

static int nearest_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                           void **out) {
    (void)num; /* no arithmetic: codes move unchanged */
    *out = NULL;
    EmuResize r;
    int rc = emu_resize_prepare(m, op, &r);
    if (rc != NEURON_NO_ERROR) return rc;
    const int32_t oh = r.oh, ow = r.ow;
    NearestParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    p->rows = malloc(((size_t)oh + ow) * sizeof(int32_t));
    if (p->rows == NULL) {
        free(p);
        return NEURON_OUT_OF_MEMORY;
    }
    p->cols = p->rows + oh;
    p->r = r;
    axis(r.h, oh, r.align_corners, r.half_pixel, p->rows);
    axis(r.w, ow, r.align_corners, r.half_pixel, p->cols);
    *out = p;
    return NEURON_NO_ERROR;
}

typedef struct {
    const NearestParams *p;
    const int8_t *x;
    int8_t *out;
} NearestJob;

/* Output rows [begin, end) of the n * oh rows. */
static void nearest_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const NearestJob *j = ctx;
    const NearestParams *p = j->p;
    const size_t c = (size_t)p->r.c * p->r.size; /* bytes per pixel */
    for (int64_t r = begin; r < end; r++) {
        const int32_t b = (int32_t)(r / p->r.oh), oy = (int32_t)(r % p->r.oh);
        const int8_t *row = j->x + ((size_t)b * p->r.h + p->rows[oy]) * p->r.w * c;
        int8_t *dst = j->out + ((size_t)b * p->r.oh + oy) * p->r.ow * c;
        for (int32_t ox = 0; ox < p->r.ow; ox++)
            memcpy(dst + ox * c, row + (size_t)p->cols[ox] * c, c);
    }
}

static void nearest_eval(const void *params, const void *const *inputs, void *output,
                         EmuScratch *scratch) {
    const NearestParams *p = params;
    const NearestJob job = {p, inputs[0], output};
    emu_parallel_for(scratch, (int64_t)p->r.n * p->r.oh,
                     emu_par_grain(scratch, (int64_t)p->r.ow * p->r.c), nearest_rows, &job);
}

const EmuKernel emu_k_resize_nearest_neighbor = {NEURON_RESIZE_NEAREST_NEIGHBOR, "RESIZE_NEAREST_NEIGHBOR",
                                        nearest_prepare, nearest_eval, NULL, nearest_release};
