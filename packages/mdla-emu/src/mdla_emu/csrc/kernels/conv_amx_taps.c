/*
 * conv_amx_taps.c: a stride-1 k x k CONV_2D on emu_gemm_amx_gather without im2col:
 * the tile rows are loaded straight from a padded copy of the input rows, one 64-byte depth
 * chunk of one tap at a time, so each output pixel's sums are
 *
 *   s = init + sum_{tap, c < cip} u[pixel(tap) * ci + c] * w'[tap * cip + c]
 *
 * with w'[tap * cip + c] = w[tap * ci + c] for c < ci and 0 for ci <= c < cip (cip the input
 * channels padded to 64). The bytes past a pixel's ci codes (the next pixel's, or the copy's
 * tail) meet those zero weights, so the terms are the im2col row's and the sums the same,
 * exact in any order as gemm_amx.h says (the real depth bounds every partial sum).
 *
 * The copy holds the tile's input rows, each Wp = pad_left + w + pr pixels (pr: what the
 * window reaches past the image), z_in's code outside the image (the tap adds (z - z) w = 0)
 * and output pixel (oy, ox)'s tap (i, j) at copy pixel (oy - oy0 + i dh, ox + j dw).
 * Stride 1 only: the tile's output rows are one run of virtual rows q = (oy - oy0) Wp + ox
 * (copy pixel q plus the tap's offset), ci bytes apart; those with ox >= ow read the next
 * row's pixels and are dropped. (A stride-2 conv run so would compute a row per input column,
 * about twice its outputs, or pad each output row to 16 rows: 7 -> 16 in resnet18's last
 * layer; it stays staged.) Taken when the per-tap padding adds at most an eighth to the depth
 * (ci a multiple of 64: none).
 */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "gemm_amx.h"

#define TAPS_COPY_BYTES 98304 /* the input rows' copy per tile (kept in L2) */

/* The 16-row tiles of r output rows' virtual rows. */
static int32_t taps_tiles(const ConvParams *p, int32_t r) {
    return ((r - 1) * p->wp + p->ow + 15) / 16;
}

/* The copy's bytes for r output rows: its rows, then what the last tile's rows read past them. */
static size_t taps_copy(const ConvParams *p, int32_t r) {
    const EmuWindow *w = &p->win;
    const size_t reach = (size_t)taps_tiles(p, r) * 16 * p->ci + (size_t)p->koff[p->nk - 1] +
                         EMU_AMX_KB;
    const size_t rows = (size_t)(r + (p->kh - 1) * w->dilation_h) * p->wp * p->ci;
    return ((reach > rows ? reach : rows) + 63) & ~(size_t)63;
}

int emu_conv_taps_prepare(ConvParams *p, const int8_t *w) {
    const EmuWindow *win = &p->win;
    const int32_t cip = emu_round_up(p->ci, EMU_AMX_KB), taps = p->kh * p->kw;
    const int32_t reach = (p->ow - 1) * win->stride_w + (p->kw - 1) * win->dilation_w + 1;
    const int32_t pr = reach - win->pad_left - p->w;
    p->taps = true;
    p->wp = win->pad_left + p->w + (pr > 0 ? pr : 0);
    p->nk = taps * cip / EMU_AMX_KB;
    p->kpad64 = taps * cip;
    p->koff = malloc((size_t)p->nk * sizeof *p->koff);
    int8_t *wt = calloc((size_t)p->co * p->kpad64, 1);
    p->packed = malloc((size_t)p->cpad32 * p->kpad64);
    p->init = malloc((size_t)p->cpad32 * sizeof *p->init);
    if (p->koff == NULL || wt == NULL || p->packed == NULL || p->init == NULL) {
        free(wt);
        return NEURON_OUT_OF_MEMORY;
    }
    for (int32_t t = 0; t < taps; t++) {
        const int32_t i = t / p->kw, j = t % p->kw;
        const int32_t at = (i * win->dilation_h * p->wp + j * win->dilation_w) * p->ci;
        for (int32_t c = 0; c < cip / EMU_AMX_KB; c++)
            p->koff[t * (cip / EMU_AMX_KB) + c] = at + c * EMU_AMX_KB;
        for (int32_t o = 0; o < p->co; o++)
            memcpy(wt + (size_t)o * p->kpad64 + (size_t)t * cip,
                   w + (size_t)o * p->depth + (size_t)t * p->ci, (size_t)p->ci);
    }
    emu_gemm_amx_pack(wt, p->co, p->kpad64, p->z_in, p->kpad64, p->cpad32, p->packed, p->init);
    free(wt);
    const int32_t row = p->wp * p->ci, fit = TAPS_COPY_BYTES / (row > 0 ? row : 1);
    const int32_t r = fit - (p->kh - 1) * win->dilation_h;
    p->tap_rows = r < 1 ? 1 : (r > p->oh ? p->oh : r);
    return p->rq.narrow ? emu_conv_fold_requant(p, p->cpad32) : NEURON_NO_ERROR;
}

/* The copy, the tiles' and rows' pointers (an even count of tiles), then the int32 sums when
 * the requantization runs after the GEMM. */
size_t emu_conv_taps_scratch(const ConvParams *p) {
    const size_t tiles = (size_t)taps_tiles(p, p->tap_rows) + 1;
    return taps_copy(p, p->tap_rows) + tiles * sizeof(void *) + tiles * 16 * sizeof(void *) +
           (p->rq.narrow ? 0 : (size_t)p->tap_rows * p->ow * p->co * sizeof(int32_t));
}

/* The input rows of output rows [oy0, oy0 + r) of image b into the copy, z_in's code around
 * the image, zeros in the tail the last tiles read. */
static void fill(const ConvParams *p, const int8_t *in, int32_t b, int32_t oy0, int32_t r,
                 int8_t *copy) {
    const EmuWindow *w = &p->win;
    const int32_t rows = r + (p->kh - 1) * w->dilation_h;
    const size_t ci = (size_t)p->ci, left = (size_t)w->pad_left * ci, run = (size_t)p->w * ci;
    const size_t row = (size_t)p->wp * ci;
    for (int32_t y = 0; y < rows; y++) {
        const int32_t iy = oy0 - w->pad_top + y;
        int8_t *dst = copy + (size_t)y * row;
        if (iy < 0 || iy >= p->h) {
            memset(dst, p->z_in, row);
            continue;
        }
        memset(dst, p->z_in, left);
        memcpy(dst + left, in + ((size_t)b * p->h + iy) * run, run);
        memset(dst + left + run, p->z_in, row - left - run);
    }
    memset(copy + (size_t)rows * row, 0, taps_copy(p, r) - (size_t)rows * row);
}

/* Where output row oy0 + rr, pixel ox goes: its int8 codes, or its int32 sums in acc. */
static void *dest(const ConvParams *p, const ConvJob *job, int32_t *acc, int32_t b, int32_t oy0,
                  int32_t rr, int32_t ox) {
    if (p->rq.narrow)
        return job->out + (((size_t)b * p->oh + oy0 + rr) * p->ow + ox) * p->co;
    return acc + ((size_t)rr * p->ow + ox) * p->co;
}

/* The tiles' first rows and every row's destination (NULL: dropped), from channel c0 on; the
 * count of tiles. */
static int32_t layout(const ConvParams *p, const ConvJob *job, int8_t *copy, int32_t *acc,
                      int32_t b, int32_t oy0, int32_t r, int32_t c0, const int8_t **tiles,
                      void **rowp) {
    const int32_t nt = taps_tiles(p, r);
    for (int32_t t = 0; t < nt; t++) {
        tiles[t] = copy + (size_t)t * 16 * p->ci;
        for (int32_t i = 0; i < 16; i++) {
            const int32_t y = (t * 16 + i) / p->wp, x = (t * 16 + i) % p->wp;
            rowp[t * 16 + i] =
                y < r && x < p->ow ? (int8_t *)dest(p, job, acc, b, oy0, y, x) + c0 : NULL;
        }
    }
    if (nt % 2 == 1) { /* the last block's second tile: read, never stored */
        tiles[nt] = tiles[nt - 1];
        for (int32_t i = 0; i < 16; i++) rowp[nt * 16 + i] = NULL;
    }
    return nt + nt % 2;
}

/* Output rows [oy0, oy0 + r) of image b, channels [c0, c0 + width) (all unless rq.narrow). */
static void group(const ConvParams *p, const ConvJob *job, const EmuGemmRq *rq, int32_t b,
                  int32_t oy0, int32_t r, int32_t c0, int32_t width, uint8_t *scratch) {
    const size_t copy_bytes = taps_copy(p, p->tap_rows);
    const size_t tiles_max = (size_t)taps_tiles(p, p->tap_rows) + 1;
    int8_t *copy = (int8_t *)scratch;
    const int8_t **tiles = (const int8_t **)(void *)(scratch + copy_bytes);
    void **rowp = (void **)(scratch + copy_bytes + tiles_max * sizeof(void *));
    int32_t *acc = (int32_t *)(void *)(scratch + copy_bytes + tiles_max * 17 * sizeof(void *));
    fill(p, job->in, b, oy0, r, copy);
    const int32_t nt = layout(p, job, copy, acc, b, oy0, r, c0, tiles, rowp);
    const EmuAmxRows g = {tiles, nt / 2, p->ci, p->koff, p->nk, rowp};
    const EmuGemmRq at = emu_gemm_rq_at(*rq, c0);
    emu_gemm_amx_gather(&g, p->packed + (size_t)c0 * p->kpad64, p->init + c0,
                        p->rq.narrow ? &at : NULL, width);
    if (!p->rq.narrow)
        emu_requant_rows(&p->rq, acc, (size_t)p->co,
                         job->out + ((size_t)b * p->oh + oy0) * p->ow * p->co, r * p->ow);
}

/* Task t: the job->tile / ow output rows from row t * that (over the n * oh rows). */
void emu_conv_taps_tiles(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const ConvJob *job = ctx;
    const ConvParams *p = job->p;
    const EmuGemmRq rq = emu_gemm_rq(p->rqc, (size_t)p->cpad32, p->rq.z_out, p->rq.lo, p->rq.hi);
    const int64_t per = job->tile / p->ow, all = (int64_t)p->n * p->oh;
    for (int64_t i = begin; i < end; i++) {
        int32_t c0, width;
        const int64_t t = emu_conv_item(job, i, &c0, &width);
        const int64_t last = (t + 1) * per < all ? (t + 1) * per : all;
        for (int64_t g = t * per; g < last;) {
            const int32_t b = (int32_t)(g / p->oh), oy0 = (int32_t)(g % p->oh);
            const int64_t left = last - g;
            const int32_t r = (int32_t)(left < p->oh - oy0 ? left : p->oh - oy0);
            group(p, job, &rq, b, oy0, r, c0, width, scratch);
            g += r;
        }
    }
}
