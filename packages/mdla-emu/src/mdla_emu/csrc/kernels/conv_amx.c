/*
 * conv_amx.c: CONV_2D on emu_gemm_amx (gemm_amx.h), the x86-64 AMX path.
 *
 * Per tile of output pixels the rows of codes are staged: each row is the pixel's im2col row
 * (z_in's code for a tap outside the image: it adds (z - z) * w = 0; zeros from the depth up
 * to kpad64, which meet zero weights) and rows past the tile's end, up to the 32-row block, are
 * zeros and never stored. A pointwise conv reads its whole 32-row blocks from the input itself:
 * output pixel q's row starts at input pixel q's ci codes, ci apart, and its bytes from ci up to
 * kpad64 (the next pixels' codes) meet the zero weights of the depth padding, so they add
 * nothing; only blocks whose last row's kpad64 bytes lie inside the input are read so, the rest
 * is staged. Either way the terms are those of the im2col rows, so the same sums.
 *
 * A stride-1 k x k conv whose per-tap padding of the channels to 64 adds at most an eighth to
 * the depth (ci a multiple of 64: none) takes conv_amx_taps.c instead: no staging at all.
 *
 * With rq.narrow the GEMM requantizes each finished block and writes the int8 output; else
 * (single rounding, wide sums) it writes the int32 sums and emu_requant_rows runs on them.
 */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "gemm_amx.h"

#define TILE_AMX_BYTES 131072 /* the staged rows' bytes per tile (kept in L2) */
#define TILE_AMX_BLOCKS 8     /* at most this many 32-row blocks per tile */

int emu_conv_amx_prepare(ConvParams *p, const int8_t *w) {
    p->amx = true;
    p->kpad64 = emu_round_up(p->depth, EMU_AMX_KB);
    p->cpad32 = emu_round_up(p->co, EMU_AMX_NR);
    const int32_t fit = TILE_AMX_BYTES / p->kpad64 / EMU_AMX_MR;
    p->tile_u8 = EMU_AMX_MR * (fit < 1 ? 1 : (fit > TILE_AMX_BLOCKS ? TILE_AMX_BLOCKS : fit));
    const int32_t cip = emu_round_up(p->ci, EMU_AMX_KB);
    if (!p->pointwise && p->win.stride_h == 1 && p->win.stride_w == 1 &&
        (int64_t)p->kh * p->kw * cip * 8 <= (int64_t)p->kpad64 * 9)
        return emu_conv_taps_prepare(p, w); /* the per-tap padding adds at most an eighth */
    p->packed = malloc((size_t)p->cpad32 * p->kpad64);
    p->init = malloc((size_t)p->cpad32 * sizeof *p->init);
    if (p->packed == NULL || p->init == NULL) return NEURON_OUT_OF_MEMORY;
    emu_gemm_amx_pack(w, p->co, p->depth, p->z_in, p->kpad64, p->cpad32, p->packed, p->init);
    return p->rq.narrow ? emu_conv_fold_requant(p, p->cpad32) : NEURON_NO_ERROR;
}

/* The staged rows (tile_u8, a multiple of 32, x kpad64 bytes), then the int32 sums when the
 * requantization runs after the GEMM. */
size_t emu_conv_amx_scratch(const ConvParams *p) {
    if (p->taps) return emu_conv_taps_scratch(p);
    return (size_t)p->tile_u8 * p->kpad64 +
           (p->rq.narrow ? 0 : (size_t)p->tile_u8 * p->co * sizeof(int32_t));
}

/* The rows of output pixels [start, start + rows) into `cols` (kpad64 apart), zero rows up to
 * the 32-row block. */
static void stage(const ConvParams *p, const int8_t *in, int64_t start, int32_t rows,
                  int8_t *cols) {
    int32_t b = (int32_t)(start / ((int64_t)p->ow * p->oh));
    int32_t oy = (int32_t)((start / p->ow) % p->oh), ox = (int32_t)(start % p->ow);
    for (int32_t r = 0; r < rows; r++) {
        emu_conv_im2col_codes(p, in, b, oy, ox, cols + (size_t)r * p->kpad64, p->kpad64);
        if (++ox == p->ow) {
            ox = 0;
            if (++oy == p->oh) oy = 0, b++;
        }
    }
    const int32_t padded = emu_round_up(rows, EMU_AMX_MR);
    memset(cols + (size_t)rows * p->kpad64, 0, (size_t)(padded - rows) * p->kpad64);
}

/* `rows` output rows from the code rows `a` (lda apart) into out (int8, co apart), their
 * channels [c0, c0 + width) (all of them unless rq.narrow: conv_cols). */
static void rows_out(const ConvParams *p, const EmuGemmRq *rq, int32_t c0, int32_t width,
                     const int8_t *a, int32_t lda, int32_t rows, int8_t *out, int32_t *acc) {
    if (p->rq.narrow) {
        const EmuGemmRq at = emu_gemm_rq_at(*rq, c0);
        emu_gemm_amx(a, lda, rows, p->packed + (size_t)c0 * p->kpad64, p->kpad64, p->init + c0,
                     &at, out + c0, p->co, width);
        return;
    }
    emu_gemm_amx(a, lda, rows, p->packed, p->kpad64, p->init, NULL, acc, p->co, p->co);
    emu_requant_rows(&p->rq, acc, (size_t)p->co, out, rows);
}

/* The rows from `start` (of `rows`) a pointwise conv reads in place: whole 32-row blocks whose
 * rows q all have q * ci + kpad64 <= the input's pixels * ci bytes. */
static int32_t in_place(const ConvParams *p, int64_t pixels, int64_t start, int32_t rows) {
    if (!p->pointwise || pixels * p->ci < p->kpad64) return 0;
    const int64_t fit = (pixels * p->ci - p->kpad64) / p->ci + 1 - start; /* rows q >= start */
    const int64_t n = fit < rows ? fit : rows;
    return n <= 0 ? 0 : (int32_t)(n / EMU_AMX_MR * EMU_AMX_MR);
}

void emu_conv_amx_tiles(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const ConvJob *job = ctx;
    const ConvParams *p = job->p;
    int8_t *cols = (int8_t *)scratch;
    int32_t *acc = (int32_t *)(void *)(scratch + (size_t)p->tile_u8 * p->kpad64);
    const EmuGemmRq rq = emu_gemm_rq(p->rqc, (size_t)p->cpad32, p->rq.z_out, p->rq.lo, p->rq.hi);
    const int64_t pixels = (int64_t)p->n * p->oh * p->ow;
    for (int64_t i = begin; i < end; i++) {
        int32_t c0, width;
        int64_t start = emu_conv_item(job, i, &c0, &width) * job->tile;
        int32_t rows = (int32_t)(pixels - start < job->tile ? pixels - start : job->tile);
        const int32_t whole = in_place(p, pixels, start, rows);
        if (whole > 0) {
            rows_out(p, &rq, c0, width, job->in + (size_t)start * p->ci, p->ci, whole,
                     job->out + (size_t)start * p->co, acc);
            start += whole;
            rows -= whole;
        }
        if (rows == 0) continue;
        stage(p, job->in, start, rows, cols);
        rows_out(p, &rq, c0, width, cols, p->kpad64, rows, job->out + (size_t)start * p->co,
                 acc);
    }
}
