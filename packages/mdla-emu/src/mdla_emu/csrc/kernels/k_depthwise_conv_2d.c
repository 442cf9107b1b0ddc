/*
 * DEPTHWISE_CONV_2D, int8 per-channel (TFLite reference_integer_ops/depthwise_conv.h).
 *
 *   acc[n,y,x,c*m+k] = sum_{i,j} w[0,i,j,c*m+k] * (in[n, y*sh + i*dh - t, x*sw + j*dw - l, c] - z_in)
 *                      (taps outside the image are skipped)
 *   out = clamp(MBQM(acc + bias[c*m+k], M_ck, s_ck) + z_out, act_min, act_max)
 *
 * Loops: per output pixel, per tap inside the image, one pass over the contiguous channels
 * (the filter (1,KH,KW,C*m) is [tap][C*m], the input row [C]). Bounds: |acc| <= KH*KW*255*127.
 * With multiplier 1 and horizontal stride 1 a run of output pixels reads a run of input pixels,
 * so one tap over `period` pixels (period * C a multiple of 64) is one flat loop against the
 * tap's weights repeated `period` times (`wrep`): the same products, added in the same order.
 * Above EMU_ISA_PORTABLE (simd.h, chosen at prepare) multiplier-1 rows run emu_dw_row_*: per
 * pixel and block of channels every tap is added in one vector register, stored once (exact:
 * every partial sum is bounded as acc is, so int32 lanes hold it in any order); in AVX2
 * emu_dw2_row_avx2 adds two taps per vpmaddwd from the codes as they are (the zero point's share
 * -z * sum w preset, a tap outside the image reading a row of zero points); with AVX-512
 * VNNI and the narrow requantization, emu_dw4_row: four taps per vpdpbusd (simd.h); on aarch64
 * with dotprod, emu_dw4_neon_row: four taps per sdot (simd_neon.h), without it the NEON row
 * requantized in registers when narrow (emu_dw_row_rq_neon, as AVX-512's emu_dw_row_rq_avx512).
 */
#include <string.h>

#include "kernels.h"
#include "simd.h"
#include "simd_neon.h"

typedef struct {
    int32_t n, h, w, ci, oh, ow, co, mult;
    EmuWindow win;
    int32_t z_in;
    int16_t *filter; /* [KH*KW][co] */
    int16_t *wrep;   /* [KH*KW][period * co] (flat rows only, else NULL) */
    int32_t period;
    int isa;          /* emu_isa() at prepare for multiplier 1, else EMU_ISA_PORTABLE */
    int32_t *filter32; /* [KH*KW][co] as EmuDwRow.filter (isa above portable, not AVX2) */
    int32_t *zw;       /* [co] as EmuDwRow.zw (likewise) */
    int16_t *pairs;    /* AVX2: EmuDw2Row's pairs and zero-point row, else NULL */
    int8_t *zrow;
    EmuRequant rq;
    EmuDw4 dw4;      /* emu_dw4_row's constants (dw4.w NULL: not that path) */
    EmuConv16 *wide; /* int16 activations (conv16.c): every other field unused */
} DwParams;

static void dw_release(void *params) {
    DwParams *p = params;
    if (p == NULL) return;
    free(p->filter);
    free(p->wrep);
    free(p->filter32);
    free(p->zw);
    free(p->pairs);
    free(p->zrow);
    emu_dw4_free(&p->dw4);
    emu_conv16_free(p->wide);
    emu_requant_free(&p->rq);
    free(p);
}

/* emu_dw4_row's (or emu_dw4_neon_row's: `pack`) packed filter and per-lane constants. */
static int dw_fill4(DwParams *p, const int8_t *wv,
                    int (*pack)(EmuDw4 *, const EmuDwGeom *, const int8_t *, int32_t,
                                const EmuDwRq *)) {
    const EmuDwGeom g = emu_dw_geom(&p->win, p->h, p->w, p->ci, p->ow);
    const EmuDwRq rq = {p->rq.bias32, p->rq.left32, p->rq.m32, p->rq.right32, p->rq.mask32,
                        p->rq.z_out, p->rq.lo, p->rq.hi};
    return pack(&p->dw4, &g, wv, p->z_in, &rq) == 0 ? NEURON_NO_ERROR : NEURON_OUT_OF_MEMORY;
}

static int dw_fill(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, DwParams *p) {
    EmuWindow win;
    EMU_TRY(emu_window(m, op, &win));
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    EMU_CHECK(x->rank == 4 && f->rank == 4 && f->dims[0] == 1 && f->has_value);
    EMU_CHECK(f->dims[3] == x->dims[3] * (uint32_t)win.multiplier);
    int32_t oh, ow;
    EMU_CHECK(emu_window_output(x, &win, f->dims[3], y, &oh, &ow) == NEURON_NO_ERROR);
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
                                 win.fuse, num, &p->rq);
    if (rc != NEURON_NO_ERROR) return rc;
    const size_t taps = (size_t)win.filter_h * win.filter_w;
    p->filter = malloc(taps * p->co * sizeof *p->filter);
    if (p->filter == NULL) return NEURON_OUT_OF_MEMORY;
    const int8_t *wv = f->value;
    for (size_t i = 0; i < taps * p->co; i++) p->filter[i] = wv[i];
    p->isa = p->mult == 1 ? emu_isa() : EMU_ISA_PORTABLE;
    if (p->isa != EMU_ISA_PORTABLE) {
        p->zw = calloc((size_t)p->co, sizeof *p->zw);
        if (p->zw == NULL) return NEURON_OUT_OF_MEMORY;
        for (size_t i = 0; i < taps * p->co; i++) p->zw[i % (size_t)p->co] -= p->z_in * wv[i];
        if (p->isa != EMU_ISA_AVX2) { /* the AVX2 row reads `pairs` instead */
            p->filter32 = malloc(taps * p->co * sizeof *p->filter32);
            if (p->filter32 == NULL) return NEURON_OUT_OF_MEMORY;
            for (size_t i = 0; i < taps * p->co; i++) /* simd.h: w's int16, a zero int16 */
                p->filter32[i] = (int32_t)(uint16_t)(int16_t)wv[i];
        } else {
            p->pairs = malloc((taps + 1) / 2 * 2 * (size_t)p->co * sizeof *p->pairs);
            p->zrow = malloc((size_t)p->co);
            if (p->pairs == NULL || p->zrow == NULL) return NEURON_OUT_OF_MEMORY;
            emu_dw2_pack(wv, (int32_t)taps, p->co, p->pairs);
            memset(p->zrow, (uint8_t)(int8_t)p->z_in, (size_t)p->co);
        }
        if (p->isa == EMU_ISA_AVX512 && p->rq.narrow && emu_dw4_ready())
            return dw_fill4(p, wv, emu_dw4_pack);
        if (p->isa == EMU_ISA_NEON && p->rq.narrow && emu_dw4_neon_ready(p->co))
            return dw_fill4(p, wv, emu_dw4_neon_pack);
        return NEURON_NO_ERROR;
    }
    if (p->mult == 1 && win.stride_w == 1) {
        int32_t g = 64, r = p->co; /* period = 64 / gcd(co, 64) */
        while (r != 0) {
            const int32_t t = g % r;
            g = r;
            r = t;
        }
        p->period = 64 / g;
        const size_t run = (size_t)p->period * p->co;
        p->wrep = malloc(taps * run * sizeof *p->wrep);
        if (p->wrep == NULL) return NEURON_OUT_OF_MEMORY;
        for (size_t t = 0; t < taps; t++)
            for (size_t e = 0; e < run; e++)
                p->wrep[t * run + e] = p->filter[t * p->co + e % (size_t)p->co];
    }
    return NEURON_NO_ERROR;
}

static int dw_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    DwParams *p = calloc(1, sizeof *p);
    *out = NULL;
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    int rc = m->opnds[op->in[0]].type == NEURON_TENSOR_QUANT16_SYMM
                 ? emu_conv16_prepare(m, op, true, &p->wide)
                 : dw_fill(m, op, num, p);
    if (rc != NEURON_NO_ERROR) {
        dw_release(p);
        return rc;
    }
    *out = p;
    return NEURON_NO_ERROR;
}

/* The scratch of emu_dw_row_*'s tap list (two int32 per tap) or emu_dw4_row's rows (a pointer
 * per tap, up to 3 more): first in the scratch, so the pointers are aligned. */
static size_t dw_taps_bytes(const DwParams *p) {
    const size_t taps = (size_t)p->win.filter_h * p->win.filter_w + 3;
    const size_t each = sizeof(const int8_t *) > 2 * sizeof(int32_t) ? sizeof(const int8_t *)
                                                                     : 2 * sizeof(int32_t);
    return taps * each;
}

static size_t dw_scratch(const void *params) {
    const DwParams *p = params;
    if (p->wide != NULL) return emu_conv16_scratch(p->wide);
    return (size_t)p->ow * p->co * sizeof(int32_t) + dw_taps_bytes(p) +
           (size_t)p->co * sizeof(int16_t);
}

/* One output pixel: acc[c] = sum over the taps inside the image of w[tap][c] * (x[c] - z_in). */
EMU_BODY void dw_pixel(const DwParams *p, const int8_t *in, int32_t b, int32_t oy, int32_t ox,
                     int32_t *restrict acc, int16_t *restrict xs) {
    const EmuWindow *w = &p->win;
    const int32_t co = p->co, ci = p->ci, mult = p->mult, z = p->z_in;
    memset(acc, 0, (size_t)co * sizeof *acc);
    for (int32_t i = 0; i < w->filter_h; i++) {
        const int32_t iy = oy * w->stride_h + i * w->dilation_h - w->pad_top;
        if (iy < 0 || iy >= p->h) continue;
        for (int32_t j = 0; j < w->filter_w; j++) {
            const int32_t ix = ox * w->stride_w + j * w->dilation_w - w->pad_left;
            if (ix < 0 || ix >= p->w) continue;
            const int8_t *restrict src = in + (((size_t)b * p->h + iy) * p->w + ix) * ci;
            const int16_t *restrict wt = p->filter + (size_t)(i * w->filter_w + j) * co;
            if (mult == 1) {
                int32_t c = 0;
                for (; c + 16 <= co; c += 16) /* fixed-width blocks: whole vectors, no tail */
                    for (int32_t k = c; k < c + 16; k++)
                        acc[k] += (int32_t)(int16_t)(src[k] - z) * wt[k];
                for (; c < co; c++) acc[c] += (int32_t)(int16_t)(src[c] - z) * wt[c];
            } else {
                for (int32_t c = 0; c < ci; c++)
                    for (int32_t k = 0; k < mult; k++) xs[c * mult + k] = (int16_t)(src[c] - z);
                for (int32_t c = 0; c < co; c++) acc[c] += (int32_t)xs[c] * wt[c];
            }
        }
    }
}

/* acc[e] += (x[e] - z_in) * w[e] for e < count. */
EMU_BODY void dw_run(const int8_t *restrict x, const int16_t *restrict w, int32_t z,
                     int32_t *restrict acc, int32_t count) {
    for (int32_t e = 0; e < count; e++) acc[e] += (int32_t)(int16_t)(x[e] - z) * w[e];
}

/* One output row (multiplier 1, horizontal stride 1): acc[ox][c] over ox < ow. Per tap, the
 * output pixels whose input pixel lies inside the image, in runs of `period` pixels. */
EMU_BODY void dw_row_flat(const DwParams *p, const int8_t *in, int32_t b, int32_t oy,
                          int32_t *acc) {
    const EmuWindow *w = &p->win;
    const int32_t co = p->co, run = p->period * co;
    memset(acc, 0, (size_t)p->ow * co * sizeof *acc);
    for (int32_t i = 0; i < w->filter_h; i++) {
        const int32_t iy = oy * w->stride_h + i * w->dilation_h - w->pad_top;
        if (iy < 0 || iy >= p->h) continue;
        const int8_t *row = in + ((size_t)b * p->h + iy) * p->w * co;
        for (int32_t j = 0; j < w->filter_w; j++) {
            const int32_t off = j * w->dilation_w - w->pad_left; /* ix = ox + off */
            const int32_t lo = off < 0 ? -off : 0;
            const int32_t hi = p->w - off < p->ow ? p->w - off : p->ow;
            const int16_t *wr = p->wrep + (size_t)(i * w->filter_w + j) * run;
            int32_t ox = lo;
            for (; ox + p->period <= hi; ox += p->period)
                dw_run(row + (size_t)(ox + off) * co, wr, p->z_in, acc + (size_t)ox * co, run);
            for (; ox < hi; ox++)
                dw_run(row + (size_t)(ox + off) * co, wr, p->z_in, acc + (size_t)ox * co, co);
        }
    }
}

typedef struct {
    const DwParams *p;
    const int8_t *in;
    int8_t *out;
} DwJob;

/* Output rows [begin, end) of the n * oh rows; one row of accumulators, requantized at once. */
EMU_BODY void dw_rows(const DwJob *job, int64_t begin, int64_t end, uint8_t *scratch) {
    const DwParams *p = job->p;
    int32_t *taps = (int32_t *)scratch;
    int32_t *acc = (int32_t *)(scratch + dw_taps_bytes(p));
    int16_t *xs = (int16_t *)(acc + (size_t)p->ow * p->co);
    EmuDwRow d = {NULL, p->filter32, emu_dw_geom(&p->win, p->h, p->w, p->ci, p->ow), p->z_in,
                  p->zw};
    EmuDw2Row d2 = {NULL, p->pairs, p->zw, p->zrow, d.g};
    const EmuDwRq rq = {p->rq.bias32, p->rq.left32, p->rq.m32, p->rq.right32, p->rq.mask32,
                        p->rq.z_out, p->rq.lo, p->rq.hi};
    for (int64_t row = begin; row < end; row++) {
        const int32_t b = (int32_t)(row / p->oh), oy = (int32_t)(row % p->oh);
        d.image = job->in + (size_t)b * p->h * p->w * p->ci;
        d2.image = d.image;
        if (p->dw4.w != NULL) {
            (p->isa == EMU_ISA_NEON ? emu_dw4_neon_row : emu_dw4_row)(
                &p->dw4, &d.g, d.image, oy, job->out + (size_t)row * p->ow * p->co,
                (const int8_t **)(void *)taps);
            continue;
        }
        if (p->isa == EMU_ISA_AVX512 && p->rq.narrow) {
            emu_dw_row_rq_avx512(&d, &rq, oy, job->out + (size_t)row * p->ow * p->co, taps);
            continue;
        }
        if (p->isa == EMU_ISA_NEON && p->rq.narrow) { /* no dotprod: no emu_dw4_neon_row */
            emu_dw_row_rq_neon(&d, &rq, oy, job->out + (size_t)row * p->ow * p->co, taps);
            continue;
        }
        if (p->isa == EMU_ISA_AVX512)
            emu_dw_row_avx512(&d, oy, acc, taps);
        else if (p->isa == EMU_ISA_AVX2)
            emu_dw2_row_avx2(&d2, oy, acc, (const int8_t **)(void *)taps);
        else if (p->isa == EMU_ISA_NEON)
            emu_dw_row_neon(&d, oy, acc, taps);
        else if (p->wrep != NULL)
            dw_row_flat(p, job->in, b, oy, acc);
        else
            for (int32_t ox = 0; ox < p->ow; ox++)
                dw_pixel(p, job->in, b, oy, ox, acc + (size_t)ox * p->co, xs);
        emu_requant_rows(&p->rq, acc, (size_t)p->co, job->out + (size_t)row * p->ow * p->co,
                         p->ow);
    }
}

EMU_DISPATCHED((const DwJob *job, int64_t begin, int64_t end, uint8_t *scratch), dw_rows,
               (job, begin, end, scratch))

static void dw_task(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    EMU_CALL(dw_rows, ((const DwJob *)ctx, begin, end, scratch));
}

static void dw_eval(const void *params, const void *const *inputs, void *output,
                    EmuScratch *scratch) {
    const DwParams *p = params;
    if (p->wide != NULL) {
        emu_conv16_eval(p->wide, inputs[0], output, scratch);
        return;
    }
    const DwJob job = {p, inputs[0], output};
    emu_parallel_for(scratch, (int64_t)p->n * p->oh, 1, dw_task, &job);
}

const EmuKernel emu_k_depthwise_conv_2d = {NEURON_DEPTHWISE_CONV_2D, "DEPTHWISE_CONV_2D",
                                           dw_prepare, dw_eval, dw_scratch, dw_release};
