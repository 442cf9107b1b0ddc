/*
 * conv_rows.c: CONV_2D on emu_gemm_rows (gemm_rows.h): x86-64 AVX-512 VNNI (gemm_rows.c) and
 * aarch64 NEON, with or without the dot product (gemm_rows_neon.c).
 *
 * Per tile of output pixels a table of row pointers is built: when ci is a multiple of 4
 * (the implicit GEMM), row p's segment (i, j) points at the input pixel that tap of output
 * pixel p reads, or at `zrow` (ci bytes of the input zero point's code) when that tap lies
 * outside the image (a pointwise conv's rows are the input's own pixels). Otherwise
 * the row is an im2col row of codes (z_in outside the image, zeros up to kpad4). Rows past the
 * tile's end (up to the register block) point at zrow and are never stored. Both give the
 * terms of the im2col rows, so the same sums (gemm_rows.h).
 *
 * With rq.narrow the GEMM requantizes in its register tile and writes the int8 output; else
 * (single rounding, wide sums) it writes the int32 sums and emu_requant_rows runs on them.
 */
#include <string.h>

#include "conv.h"
#include "gemm.h"
#include "gemm_rows.h"

#define TILE_U8_BYTES 65536 /* the im2col tile's bytes (kept in L2) */

int emu_conv_fold_requant(ConvParams *p, int32_t cpad) {
    const EmuRequant *rq = &p->rq;
    p->rqc = calloc((size_t)4 * cpad, sizeof *p->rqc);
    if (p->rqc == NULL) return NEURON_OUT_OF_MEMORY;
    for (int32_t o = 0; o < p->co; o++) {
        p->init[o] = (int32_t)(uint32_t)((int64_t)p->init[o] + rq->bias32[o]);
        p->rqc[o] = rq->left32[o];
        p->rqc[cpad + o] = rq->m32[o];
        p->rqc[2 * cpad + o] = rq->right32[o];
        p->rqc[3 * cpad + o] = rq->mask32[o];
    }
    return NEURON_NO_ERROR;
}

int emu_conv_rows_prepare(ConvParams *p, const int8_t *w) {
    p->rows = true;
    p->implicit = p->ci % EMU_U8_KB == 0;
    p->kpad4 = emu_round_up(p->depth, EMU_U8_KB);
    p->cpad16 = emu_round_up(p->co, EMU_U8_NR);
    p->nseg = p->implicit ? p->kh * p->kw : 1;
    p->seg = p->implicit ? p->ci : p->kpad4;
    const int32_t fit = TILE_U8_BYTES / p->kpad4 / EMU_U8_MR;
    p->tile_u8 = EMU_U8_MR * (fit < 1 ? 1 : (fit > 32 ? 32 : fit));
    p->packed = malloc((size_t)p->cpad16 * p->kpad4);
    p->init = malloc((size_t)p->cpad16 * sizeof *p->init);
    p->zrow = malloc((size_t)p->seg);
    if (p->packed == NULL || p->init == NULL || p->zrow == NULL) return NEURON_OUT_OF_MEMORY;
    memset(p->zrow, (uint8_t)(int8_t)p->z_in, (size_t)p->seg);
    emu_gemm_rows_pack(w, p->co, p->depth, p->z_in, p->kpad4, p->cpad16, p->packed, p->init);
    return p->rq.narrow ? emu_conv_fold_requant(p, p->cpad16) : NEURON_NO_ERROR;
}

/* The pointer table of a tile. */
static size_t table_bytes(const ConvParams *p) {
    return (size_t)emu_round_up(p->tile_u8, EMU_U8_MR) * p->nseg * sizeof(const uint8_t *);
}

void emu_conv_im2col_codes(const ConvParams *p, const int8_t *in, int32_t b, int32_t oy,
                           int32_t ox, int8_t *restrict col, int32_t kpad) {
    const EmuWindow *w = &p->win;
    const int32_t ci = p->ci, run = p->kw * ci;
    const int32_t ix0 = ox * w->stride_w - w->pad_left;
    const bool whole = w->dilation_w == 1 && ix0 >= 0 && ix0 + p->kw <= p->w;
    for (int32_t i = 0; i < p->kh; i++) {
        const int32_t iy = oy * w->stride_h + i * w->dilation_h - w->pad_top;
        int8_t *restrict dst = col + (size_t)i * run;
        if (iy < 0 || iy >= p->h) {
            memset(dst, (uint8_t)(int8_t)p->z_in, (size_t)run);
            continue;
        }
        /* formed only for a row inside the image: above it, b * h + iy would wrap */
        const int8_t *src = in + ((size_t)b * p->h + (size_t)iy) * p->w * ci;
        if (whole) {
            memcpy(dst, src + (size_t)ix0 * ci, (size_t)run);
        } else {
            for (int32_t j = 0; j < p->kw; j++) {
                const int32_t ix = ix0 + j * w->dilation_w;
                if (ix < 0 || ix >= p->w)
                    memset(dst + (size_t)j * ci, (uint8_t)(int8_t)p->z_in, (size_t)ci);
                else
                    memcpy(dst + (size_t)j * ci, src + (size_t)ix * ci, (size_t)ci);
            }
        }
    }
    memset(col + p->depth, 0, (size_t)(kpad - p->depth));
}

size_t emu_conv_rows_scratch(const ConvParams *p) {
    return table_bytes(p) + (p->implicit ? 0 : (size_t)p->tile_u8 * p->kpad4) +
           (p->rq.narrow ? 0 : (size_t)p->tile_u8 * p->co * sizeof(int32_t));
}

/* The segment pointers of pixel (b, oy, ox) into row[s * MR]. */
static void implicit_row(const ConvParams *p, const int8_t *in, int32_t b, int32_t oy,
                            int32_t ox, const uint8_t **row) {
    const EmuWindow *w = &p->win;
    for (int32_t i = 0; i < p->kh; i++) {
        const int32_t iy = oy * w->stride_h + i * w->dilation_h - w->pad_top;
        for (int32_t j = 0; j < p->kw; j++) {
            const int32_t ix = ox * w->stride_w + j * w->dilation_w - w->pad_left;
            const int8_t *x = iy >= 0 && iy < p->h && ix >= 0 && ix < p->w
                                  ? in + (((size_t)b * p->h + iy) * p->w + ix) * p->ci
                                  : (const int8_t *)p->zrow;
            row[(size_t)(i * p->kw + j) * EMU_U8_MR] = (const uint8_t *)x;
        }
    }
}

/* Row r's segment s is ptr[(r / MR) * nseg * MR + s * MR + r % MR]. */
static void rows_table(const ConvParams *p, const int8_t *in, int64_t start, int32_t rows,
                       int8_t *cols, const uint8_t **ptr) {
    int32_t b = (int32_t)(start / ((int64_t)p->ow * p->oh));
    int32_t oy = (int32_t)((start / p->ow) % p->oh), ox = (int32_t)(start % p->ow);
    const int32_t padded = emu_round_up(rows, EMU_U8_MR);
    if (p->pointwise && p->implicit) { /* output pixel q reads input pixel q */
        for (int32_t r = 0; r < padded; r++)
            ptr[(size_t)(r / EMU_U8_MR) * EMU_U8_MR + r % EMU_U8_MR] =
                r < rows ? (const uint8_t *)in + (size_t)(start + r) * p->ci : p->zrow;
        return;
    }
    for (int32_t r = 0; r < padded; r++) {
        const uint8_t **row = ptr + (size_t)(r / EMU_U8_MR) * p->nseg * EMU_U8_MR + r % EMU_U8_MR;
        if (r >= rows) {
            for (int32_t s = 0; s < p->nseg; s++) row[(size_t)s * EMU_U8_MR] = p->zrow;
        } else if (p->implicit) {
            implicit_row(p, in, b, oy, ox, row);
        } else {
            int8_t *col = cols + (size_t)r * p->kpad4;
            emu_conv_im2col_codes(p, in, b, oy, ox, col, p->kpad4);
            row[0] = (const uint8_t *)col;
        }
        if (++ox == p->ow) {
            ox = 0;
            if (++oy == p->oh) oy = 0, b++;
        }
    }
}

void emu_conv_rows_tiles(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const ConvJob *job = ctx;
    const ConvParams *p = job->p;
    const uint8_t **ptr = (const uint8_t **)(void *)scratch;
    int8_t *cols = (int8_t *)(scratch + table_bytes(p));
    int32_t *acc = (int32_t *)(void *)(cols + (p->implicit ? 0 : (size_t)p->tile_u8 * p->kpad4));
    const EmuGemmRq rq = emu_gemm_rq(p->rqc, (size_t)p->cpad16, p->rq.z_out, p->rq.lo, p->rq.hi);
    const int64_t pixels = (int64_t)p->n * p->oh * p->ow;
    for (int64_t i = begin; i < end; i++) {
        int32_t c0, width; /* all channels unless rq.narrow (conv_cols) */
        const int64_t start = emu_conv_item(job, i, &c0, &width) * job->tile;
        const int32_t rows = (int32_t)(pixels - start < job->tile ? pixels - start : job->tile);
        rows_table(p, job->in, start, rows, cols, ptr);
        const EmuGemmRows a = {ptr, p->nseg, p->seg, rows};
        int8_t *out = job->out + (size_t)start * p->co;
        if (p->rq.narrow) {
            const EmuGemmRq at = emu_gemm_rq_at(rq, c0);
            emu_gemm_rows(&a, p->packed + (size_t)c0 * p->kpad4, p->init + c0, &at, out + c0,
                          p->co, width);
        } else {
            emu_gemm_rows(&a, p->packed, p->init, NULL, acc, p->co, p->co);
            emu_requant_rows(&p->rq, acc, (size_t)p->co, out, rows);
        }
    }
}
