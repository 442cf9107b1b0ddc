/*
 * RESIZE_BILINEAR, int8 NHWC (TFLite reference_ops::ResizeBilinearInteger).
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
 * [NCHW bool, align_corners bool, half_pixel_centers bool]. |v| <= 128 * 2^20 < 2^28.
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
    EMU_CHECK(r.size == 1); /* int8 only: no 16x8 form */
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
    const int8_t *x;
    int8_t *out;
} ResizeJob;

/* Output rows [begin, end) of the n * oh rows. */
static void resize_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const ResizeJob *j = ctx;
    const ResizeParams *p = j->p;
    const int64_t one = 1024;
    for (int64_t row = begin; row < end; row++) {
        const int32_t b = (int32_t)(row / p->r.oh), oy = (int32_t)(row % p->r.oh);
        const int64_t dy = p->dy[oy];
        const int8_t *r0 = j->x + ((size_t)b * p->r.h + p->y0[oy]) * p->r.w * p->r.c;
        const int8_t *r1 = j->x + ((size_t)b * p->r.h + p->y1[oy]) * p->r.w * p->r.c;
        for (int32_t ox = 0; ox < p->r.ow; ox++) {
            const int64_t dx = p->dx[ox];
            const size_t c0 = (size_t)p->x0[ox] * p->r.c, c1 = (size_t)p->x1[ox] * p->r.c;
            int8_t *dst = j->out + (((size_t)b * p->r.oh + oy) * p->r.ow + ox) * p->r.c;
            for (int32_t c = 0; c < p->r.c; c++) {
                const int64_t v = r0[c0 + c] * (one - dy) * (one - dx) +
                                  r1[c0 + c] * dy * (one - dx) + r0[c1 + c] * (one - dy) * dx +
                                  r1[c1 + c] * dy * dx;
                const int64_t q = p->rounding == EMU_ROUND_SINGLE
                                      ? emu_asr(v + (1 << 19), 20)
                                      : (v + (v > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20);
                dst[c] = (int8_t)emu_clamp(q, -128, 127);
            }
        }
    }
}

static void resize_eval(const void *params, const void *const *inputs, void *output,
                        EmuScratch *scratch) {
    const ResizeParams *p = params;
    const ResizeJob job = {p, inputs[0], output};
    const int64_t row_work = 4 * (int64_t)p->r.ow * p->r.c; /* four taps per output byte */
    emu_parallel_for(scratch, (int64_t)p->r.n * p->r.oh, emu_par_grain(scratch, row_work),
                     resize_rows, &job);
}

const EmuKernel emu_k_resize_bilinear = {NEURON_RESIZE_BILINEAR, "RESIZE_BILINEAR",
                                         resize_prepare, resize_eval, NULL, resize_release};
