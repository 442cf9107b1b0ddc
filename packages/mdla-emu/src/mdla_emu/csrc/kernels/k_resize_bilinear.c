/*
 * RESIZE_BILINEAR, int8 or int16 (16x8) NHWC (TFLite reference_ops::ResizeBilinearInteger).
 *
 * Scale in Q10:   sc = (2^10 * in + out/2) / out,  or with align_corners and out > 1
 *                 sc = (2^10 * (in-1) + (out-1)/2) / (out-1)
 * Source row:     p = y * sc (+ sc/2 - 2^9 with half_pixel_centers)
 *                 y0 = max(trunc(p / 2^10), 0),  y1 = min(trunc((p + 2^10 - 1) / 2^10), in - 1)
 *                 dy = p - 2^10 * y0 (the Q10 fraction); columns alike.
 * Sum (Q20):      v = x[y0,x0](2^10-dy)(2^10-dx) + x[y1,x0] dy (2^10-dx)
 *                   + x[y0,x1](2^10-dy) dx + x[y1,x1] dy dx
 * double:         out = trunc((v +- 2^19) / 2^20)   (ties away from zero)
 * single:         out = (v + 2^19) >> 20             (ties toward +inf)
 * Operands: input, out width, out height (i32; or f32 scales: out = floor(in * scale)),
 * [NCHW bool, align_corners bool, half_pixel_centers bool]. |v| <= 128 * 2^20 < 2^28 for int8,
 * 2^15 * 2^20 = 2^35 for int16 (TENSOR_QUANT16_SYMM, zero point 0): the sum is int64 for both,
 * and the result, a convex combination of the codes, needs no clamp beyond the type's.
 */
#include "kernels.h"

typedef struct {
    EmuResize r;
    int32_t rounding;
    int32_t *y0, *y1, *dy, *x0, *x1, *dx; /* one allocation, 3*(oh + ow) entries */
} ResizeParams;

static void resize_release(void *params) {
    ResizeParams *p = params;
    if (p == NULL) return;
    free(p->y0);
    free(p);
}

static int32_t trunc_div(int64_t a, int64_t d) { return (int32_t)(a / d); }

static void axis(int32_t n_in, int32_t n_out, bool align, bool half, int32_t *lo, int32_t *hi,
                 int32_t *frac) {
    const int64_t sc = align && n_out > 1 ? (1024LL * (n_in - 1) + (n_out - 1) / 2) / (n_out - 1)
                                          : (1024LL * n_in + n_out / 2) / n_out;
    for (int32_t i = 0; i < n_out; i++) {
        int64_t p = i * sc;
        if (half) p += sc / 2 - 512;
        int32_t l = trunc_div(p, 1024), h = trunc_div(p + 1023, 1024);
        l = l > 0 ? l : 0;
        h = h < n_in - 1 ? h : n_in - 1;
        lo[i] = l;
        hi[i] = h;
        frac[i] = (int32_t)(p - 1024LL * l);
    }
}

static int resize_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                          void **out) {
    *out = NULL;
    EmuResize r;
    int rc = emu_resize_prepare(m, op, &r);
    if (rc != NEURON_NO_ERROR) return rc;
    const int32_t oh = r.oh, ow = r.ow;
    ResizeParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    p->y0 = malloc(3 * ((size_t)oh + ow) * sizeof(int32_t));
    if (p->y0 == NULL) {
        free(p);
        return NEURON_OUT_OF_MEMORY;
    }
    p->y1 = p->y0 + oh;
    p->dy = p->y1 + oh;
    p->x0 = p->dy + oh;
    p->x1 = p->x0 + ow;
    p->dx = p->x1 + ow;
    p->r = r;
    p->rounding = num.rounding;
    axis(r.h, oh, r.align_corners, r.half_pixel, p->y0, p->y1, p->dy);
    axis(r.w, ow, r.align_corners, r.half_pixel, p->x0, p->x1, p->dx);
    *out = p;
    return NEURON_NO_ERROR;
}

typedef struct {
    const ResizeParams *p;
    const void *x;
    void *out;
} ResizeJob;

/* The header's rounding of one Q20 sum. */
static inline int64_t resize_round(int64_t v, int32_t rounding) {
    return rounding == EMU_ROUND_SINGLE ? emu_asr(v + (1 << 19), 20)
                                        : (v + (v > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20);
}

/* Output rows [begin, end) of the n * oh rows, int8 or (wide) int16 codes. */
static inline __attribute__((always_inline)) void
resize_body(const ResizeJob *j, int64_t begin, int64_t end, bool wide) {
    const ResizeParams *p = j->p;
    const int64_t one = 1024;
    const size_t row_len = (size_t)p->r.w * p->r.c;
    for (int64_t row = begin; row < end; row++) {
        const int32_t b = (int32_t)(row / p->r.oh), oy = (int32_t)(row % p->r.oh);
        const int64_t dy = p->dy[oy];
        const size_t r0 = ((size_t)b * p->r.h + p->y0[oy]) * row_len;
        const size_t r1 = ((size_t)b * p->r.h + p->y1[oy]) * row_len;
        for (int32_t ox = 0; ox < p->r.ow; ox++) {
            const int64_t dx = p->dx[ox];
            const size_t c0 = (size_t)p->x0[ox] * p->r.c, c1 = (size_t)p->x1[ox] * p->r.c;
            const size_t at = (((size_t)b * p->r.oh + oy) * p->r.ow + ox) * p->r.c;
            for (int32_t c = 0; c < p->r.c; c++) {
                const size_t e[4] = {r0 + c0 + c, r1 + c0 + c, r0 + c1 + c, r1 + c1 + c};
                int64_t x[4];
                for (int k = 0; k < 4; k++)
                    x[k] = wide ? ((const int16_t *)j->x)[e[k]] : ((const int8_t *)j->x)[e[k]];
                const int64_t v = x[0] * (one - dy) * (one - dx) + x[1] * dy * (one - dx) +
                                  x[2] * (one - dy) * dx + x[3] * dy * dx;
                const int64_t q = resize_round(v, p->rounding);
                if (wide)
                    ((int16_t *)j->out)[at + c] = (int16_t)emu_clamp(q, -32768, 32767);
                else
                    ((int8_t *)j->out)[at + c] = (int8_t)emu_clamp(q, -128, 127);
            }
        }
    }
}

static void resize_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    resize_body(ctx, begin, end, false);
}

static void resize_rows16(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    resize_body(ctx, begin, end, true);
}

static void resize_eval(const void *params, const void *const *inputs, void *output,
                        EmuScratch *scratch) {
    const ResizeParams *p = params;
    const ResizeJob job = {p, inputs[0], output};
    const int64_t row_work = 4 * (int64_t)p->r.ow * p->r.c; /* four taps per output byte */
    emu_parallel_for(scratch, (int64_t)p->r.n * p->r.oh, emu_par_grain(scratch, row_work),
                     p->r.size == 2 ? resize_rows16 : resize_rows, &job);
}

const EmuKernel emu_k_resize_bilinear = {NEURON_RESIZE_BILINEAR, "RESIZE_BILINEAR",
                                         resize_prepare, resize_eval, NULL, resize_release};
