/*
 * CONV_2D, int8 per-channel (TFLite reference_integer_ops/conv.h), as im2col + int16 GEMM.
 *
 *   acc[n,y,x,o] = sum_{i,j,c} w[o,i,j,c] * (in[n, y*sh + i*dh - t, x*sw + j*dw - l, c] - z_in)
 *                  (taps outside the image are skipped: the same as padding with z_in)
 *   out = clamp(MBQM(acc + bias[o], M_o, s_o) + z_out, act_min, act_max)
 *
 * im2col row of output pixel p, k = (i*KW + j)*I + c:  col[p][k] = in[...] - z_in, 0 outside.
 * Then acc[p][o] = sum_k col[p][k] * w[o][k] (the filter (O,KH,KW,I) is already [O][K]).
 * Bounds: |col| <= 255 fits int16, |w| <= 127; |acc| < K * 2^15 < 2^31 for K <= 2^16.
 * Blocking (emu_gemm_s16_blocked): K is zero-padded to a multiple of EMU_GEMM_KB in both
 * operands, the filter to a multiple of EMU_GEMM_NR rows (once, at prepare), a tile of output
 * pixels to a multiple of EMU_GEMM_MR rows; padded rows and columns are computed and dropped.
 * Fast paths: on x86-64 with AVX-512 VNNI and on aarch64 (emu_gemm_rows_ready(): NEON, with
 * sdot or without) the rows path of conv_rows.c replaces this one: the 8-bit GEMM (gemm.h's
 * packing, the zero point folded into each column's initial value) as an implicit GEMM (no
 * im2col when ci is a multiple of 4) with the requantization in the register tile; on a CPU
 * with AMX-INT8, conv_amx.c's path replaces both (gemm_amx.h: int8 x int8 tiles, the
 * requantization on each finished 32 x 32 block; a k x k conv over enough channels loads its
 * tile rows from a padded copy of the input rows, conv_amx_taps.c, in tiles of whole output
 * rows).
 * Without either, on a CPU with AVX2 (emu_isa(), simd.h) the int16
 * tiles run emu_gemm_s16_avx2 (the same sums in int32 lanes, exact as simd.h says) on a filter
 * packed for it instead of emu_gemm_s16_blocked.
 */
#include <string.h>

#include "conv.h"
#include "gemm.h"
#include "gemm_amx.h"
#include "gemm_rows.h"
#include "simd.h"

#define TILE_BYTES 32768 /* im2col bytes per GEMM tile: its rows stay in L1 */
#define AVX2_LEAST 3      /* register blocks of EMU_GEMM_MR rows an AVX2 tile has at least */


static void conv_free(void *p) {
    ConvParams *cp = p;
    if (cp == NULL) return;
    free(cp->filter);
    free(cp->packed16);
    free(cp->packed);
    free(cp->init);
    free(cp->zrow);
    free(cp->rqc);
    free(cp->koff);
    emu_conv16_free(cp->wide);
    emu_requant_free(&cp->rq);
    free(cp);
}

static int conv_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    EmuWindow win;
    EMU_TRY(emu_window(m, op, &win));
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    EMU_CHECK(x->rank == 4 && f->rank == 4 && f->dims[3] == x->dims[3] && f->has_value);
    const int32_t depth = (int32_t)(f->dims[1] * f->dims[2] * f->dims[3]);
    EMU_CHECK(depth <= 65536);
    int32_t oh, ow;
    EMU_CHECK(emu_window_output(x, &win, f->dims[0], y, &oh, &ow) == NEURON_NO_ERROR);
    ConvParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    *out = p; /* released by conv_prepare_checked on error */
    p->n = (int32_t)x->dims[0];
    p->h = (int32_t)x->dims[1];
    p->w = (int32_t)x->dims[2];
    p->ci = (int32_t)x->dims[3];
    p->oh = oh;
    p->ow = ow;
    p->co = (int32_t)f->dims[0];
    p->kh = win.filter_h;
    p->kw = win.filter_w;
    p->depth = depth;
    p->win = win;
    p->z_in = x->zero_point;
    int rc = emu_requant_prepare(m, op->in[0], op->in[1], op->in[2], op->out[0], p->co, 0,
                                 win.fuse, num, &p->rq);
    if (rc != NEURON_NO_ERROR) return rc;
    p->pointwise = p->kh == 1 && p->kw == 1 && win.stride_h == 1 && win.stride_w == 1 &&
                   win.pad_top == 0 && win.pad_bottom == 0 && win.pad_left == 0 &&
                   win.pad_right == 0;
    const int8_t *wv = f->value;
    if (emu_gemm_amx_ready()) return emu_conv_amx_prepare(p, wv);
    if (emu_gemm_rows_ready()) return emu_conv_rows_prepare(p, wv);
    /* emu_gemm_s16_blocked steps K in blocks of EMU_GEMM_KB; the AVX2 tiles step it in pairs,
     * so there K is padded to even only: b0's 40-channel and the squeeze-excite's 4- to
     * 28-channel inputs would otherwise go through 64 and 32 multiply-adds of mostly zeros. */
    const bool avx2 = emu_isa() == EMU_ISA_AVX2 || emu_isa() == EMU_ISA_AVX512; /* x86 only */
    p->kpad = emu_round_up(depth, avx2 ? 2 : EMU_GEMM_KB);
    p->copad = emu_round_up(p->co, EMU_GEMM_NR);
    /* At least 12 rows for the AVX2 tiles, even past TILE_BYTES: each tile streams the whole
     * filter past its rows, so a deep one (resnet18's 4608 x 512, 4.7 MB as int16) was read
     * once per 4 pixels; and 12 rows take the 6-row register tiles. */
    const int32_t fit = TILE_BYTES / (p->kpad * (int32_t)sizeof(int16_t)) / EMU_GEMM_MR;
    const int32_t least = avx2 ? AVX2_LEAST : 1;
    p->tile_rows = EMU_GEMM_MR * (fit < least ? least : (fit > 16 ? 16 : fit));
    if (avx2) {
        p->packed16 = malloc(emu_gemm_s16_avx2_size(p->co, p->kpad) * sizeof *p->packed16);
        if (p->packed16 == NULL) return NEURON_OUT_OF_MEMORY;
        emu_gemm_s16_avx2_pack(wv, p->co, depth, p->kpad, p->packed16);
        return NEURON_NO_ERROR;
    }
    p->filter = calloc((size_t)p->copad * p->kpad, sizeof *p->filter);
    if (p->filter == NULL) return NEURON_OUT_OF_MEMORY;
    for (int32_t o = 0; o < p->co; o++)
        for (int32_t k = 0; k < depth; k++)
            p->filter[(size_t)o * p->kpad + k] = wv[(size_t)o * depth + k];
    return NEURON_NO_ERROR;
}

static size_t conv_scratch(const void *params) {
    const ConvParams *p = params;
    if (p->wide != NULL) return emu_conv16_scratch(p->wide);
    if (p->amx) return emu_conv_amx_scratch(p);
    if (p->rows) return emu_conv_rows_scratch(p);
    return (size_t)p->tile_rows * p->kpad * sizeof(int16_t) +
           (size_t)p->tile_rows * p->copad * sizeof(int32_t);
}

/* The im2col row of output pixel (b, oy, ox): KH*KW runs of I channels, each copied or zero,
 * then zeros up to kpad. A kernel row whose KW taps are neighbouring pixels inside the image
 * (dilation 1) is one run of KW*I codes in the input, copied as one: a 3-channel stem's taps
 * were 3 codes a loop. */
static void im2col_row(const ConvParams *p, const int8_t *in, int32_t b, int32_t oy, int32_t ox,
                       int16_t *restrict col) {
    const EmuWindow *w = &p->win;
    const int32_t ci = p->ci, z = p->z_in;
    const int32_t ix0 = ox * w->stride_w - w->pad_left;
    const bool run = w->dilation_w == 1 && ix0 >= 0 && ix0 + p->kw <= p->w;
    for (int32_t i = 0; i < p->kh; i++) {
        const int32_t iy = oy * w->stride_h + i * w->dilation_h - w->pad_top;
        if (run && iy >= 0 && iy < p->h) {
            const int8_t *restrict src = in + (((size_t)b * p->h + iy) * p->w + ix0) * ci;
            int16_t *restrict dst = col + (size_t)i * p->kw * ci;
            for (int32_t e = 0; e < p->kw * ci; e++) dst[e] = (int16_t)(src[e] - z);
            continue;
        }
        for (int32_t j = 0; j < p->kw; j++) {
            const int32_t ix = ox * w->stride_w + j * w->dilation_w - w->pad_left;
            int16_t *restrict dst = col + (size_t)(i * p->kw + j) * ci;
            if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) {
                memset(dst, 0, (size_t)ci * sizeof *dst);
                continue;
            }
            const int8_t *restrict src = in + (((size_t)b * p->h + iy) * p->w + ix) * ci;
            for (int32_t c = 0; c < ci; c++) dst[c] = (int16_t)(src[c] - z);
        }
    }
    memset(col + p->depth, 0, (size_t)(p->kpad - p->depth) * sizeof *col);
}

/* GEMM items [begin, end): item i is tile i % tiles (output pixels [t * tile, (t + 1) * tile))
 * of block i / tiles (output channels [b * cols, (b + 1) * cols), conv_cols16): block-major, so
 * a thread claiming from one end keeps to its part of the filter. */
static void conv_tiles(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const ConvJob *job = ctx;
    const ConvParams *p = job->p;
    const int32_t tile = job->tile;
    int16_t *cols = (int16_t *)scratch;
    int32_t *acc = (int32_t *)(scratch + (size_t)tile * p->kpad * sizeof(int16_t));
    const int64_t pixels = (int64_t)p->n * p->oh * p->ow;
    const int64_t tiles = (pixels + tile - 1) / tile;
    for (int64_t i = begin; i < end; i++) {
        const int64_t t = i % tiles, start = t * tile;
        const int32_t c0 = (int32_t)(i / tiles) * job->cols;
        const int32_t width = p->co - c0 < job->cols ? p->co - c0 : job->cols;
        const int32_t rows = (int32_t)(pixels - start < tile ? pixels - start : tile);
        int32_t b = (int32_t)(start / ((int64_t)p->ow * p->oh));
        int32_t oy = (int32_t)((start / p->ow) % p->oh), ox = (int32_t)(start % p->ow);
        for (int32_t r = 0; p->pointwise && r < rows; r++) {
            const int8_t *restrict src = job->in + (size_t)(start + r) * p->ci;
            int16_t *restrict dst = cols + (size_t)r * p->kpad;
            for (int32_t c = 0; c < p->ci; c++) dst[c] = (int16_t)(src[c] - p->z_in);
            memset(dst + p->ci, 0, (size_t)(p->kpad - p->ci) * sizeof *dst);
        }
        for (int32_t r = 0; !p->pointwise && r < rows; r++) {
            im2col_row(p, job->in, b, oy, ox, cols + (size_t)r * p->kpad);
            if (++ox == p->ow) {
                ox = 0;
                if (++oy == p->oh) oy = 0, b++;
            }
        }
        const int32_t padded = emu_round_up(rows, EMU_GEMM_MR);
        memset(cols + (size_t)rows * p->kpad, 0,
               (size_t)(padded - rows) * p->kpad * sizeof *cols);
        int8_t *out = job->out + (size_t)start * p->co;
        if (job->blocks == 1) {
            if (p->packed16 != NULL)
                emu_gemm_s16_avx2(cols, p->packed16, acc, padded, p->co, p->kpad, p->copad);
            else
                emu_gemm_s16_blocked(cols, p->filter, acc, padded, p->copad, p->kpad);
            emu_requant_rows(&p->rq, acc, (size_t)p->copad, out, rows);
            continue;
        }
        /* a block: its panels of the packed filter (8 columns each), its channels' pipeline */
        emu_gemm_s16_avx2(cols, p->packed16 + (size_t)(c0 / 8) * p->kpad * 8, acc + c0, padded,
                          width, p->kpad, p->copad);
        EmuRequant rq;
        emu_requant_slice(&p->rq, c0, width, &rq);
        for (int32_t r = 0; r < rows; r++)
            emu_requant_rows(&rq, acc + (size_t)r * p->copad + c0, (size_t)p->copad,
                             out + (size_t)r * p->co + c0, 1);
    }
}

/* The prepared tile (which sizes the scratch) on one thread; on more, at most that in whole
 * register blocks of `block` rows, sized so the tiles come in a multiple of the thread count and
 * are about equal: each thread gets as many (a 28x28 layer was 256 + 256 pixels against
 * 256 + 16; a late 7x7 or 14x14 layer is one prepared tile). Each pixel's sums and
 * requantization are the same whatever tile holds it. */
static int32_t conv_tile(int32_t prepared, int32_t block, int64_t pixels, int threads) {
    if (threads <= 1) return pixels < prepared ? (int32_t)((pixels + block - 1) / block * block)
                                               : prepared;
    const int64_t tiles = ((pixels + prepared - 1) / prepared + threads - 1) / threads * threads;
    const int64_t tile = ((pixels + tiles - 1) / tiles + block - 1) / block * block;
    return tile < prepared ? (int32_t)tile : prepared;
}

/* Blocks of output channels per tile (job->cols channels each): one per thread, in whole
 * panels of the packed filter, when the pixels make fewer tiles than threads (a squeeze-excite
 * or classifier conv of one pixel), the rows or AMX path requantizes in its tile and each block
 * reads at least a thread's least work of weight bytes; else one block of every channel. Each
 * output element's sum and requantization are the same whatever block holds it. */
static void conv_cols(const ConvParams *p, int64_t tiles, int threads, const EmuScratch *s,
                      ConvJob *job) {
    job->cols = p->co;
    job->blocks = 1;
    if (tiles >= threads || !(p->amx || p->rows) || !p->rq.narrow) return;
    const int32_t panel = p->amx ? EMU_AMX_NR : EMU_U8_NR;
    const int32_t kpad = p->amx ? p->kpad64 : p->kpad4;
    const int32_t cols = emu_round_up((p->co + threads - 1) / threads, panel);
    if (cols >= p->co || emu_par_grain(s, (int64_t)cols * kpad) > 1) return;
    job->cols = cols;
    job->blocks = (p->co + cols - 1) / cols;
}

/* The int16 AVX2 tiles cut output channels instead of pixels (one block of whole 16-column
 * steps per thread, every block over every tile at the one-thread size) when the filter
 * outweighs the im2col rows (more output channels than pixels: the 7 x 7 and 14 x 14 layers,
 * the one-pixel squeeze-excite and classifier convs) and each block holds a thread's least
 * work of weights. A pixel cut of such a layer streams the whole filter through each thread
 * for every tile and leaves few tiles to balance (49 pixels were 16 + 16 + 16 + 1, a
 * one-pixel conv one tile on one thread); a channel cut streams half of it through each and
 * gives each thread the same tiles. Each output element's sum and requantization are the same
 * whatever block holds it. */
static void conv_cols16(const ConvParams *p, int64_t pixels, int threads, const EmuScratch *s,
                        ConvJob *job) {
    if (threads <= 1 || p->packed16 == NULL || p->co <= pixels) return;
    const int32_t cols = emu_round_up((p->co + threads - 1) / threads, 16);
    if (cols >= p->co || emu_par_grain(s, (int64_t)cols * p->kpad) > 1) return;
    job->cols = cols;
    job->blocks = (p->co + cols - 1) / cols;
    job->tile = conv_tile(p->tile_rows, EMU_GEMM_MR, pixels, 1);
}

static void conv_eval(const void *params, const void *const *inputs, void *output,
                      EmuScratch *scratch) {
    const ConvParams *p = params;
    if (p->wide != NULL) {
        emu_conv16_eval(p->wide, inputs[0], output, scratch);
        return;
    }
    const int64_t pixels = (int64_t)p->n * p->oh * p->ow;
    const int threads = emu_pool_threads(scratch->pool);
    if (p->taps) { /* whole output rows per tile */
        const int64_t all = (int64_t)p->n * p->oh;
        ConvJob job = {p, inputs[0], output, conv_tile(p->tap_rows, 1, all, threads) * p->ow,
                       p->co, 1};
        if (all <= p->tap_rows) { /* one tile: cut its channels rather than its few rows */
            conv_cols(p, 1, threads, scratch, &job);
            if (job.blocks > 1) job.tile = (int32_t)all * p->ow;
        }
        emu_parallel_for(scratch, (all * p->ow + job.tile - 1) / job.tile * job.blocks, 1,
                         emu_conv_taps_tiles, &job);
        return;
    }
    if (p->rows || p->amx) {
        ConvJob job = {p, inputs[0], output,
                       conv_tile(p->tile_u8, p->amx ? EMU_AMX_MR : EMU_U8_MR, pixels, threads),
                       p->co, 1};
        const int64_t tiles = (pixels + job.tile - 1) / job.tile;
        conv_cols(p, tiles, threads, scratch, &job);
        emu_parallel_for(scratch, tiles * job.blocks, 1,
                         p->amx ? emu_conv_amx_tiles : emu_conv_rows_tiles, &job);
        return;
    }
    ConvJob job = {p, inputs[0], output, conv_tile(p->tile_rows, EMU_GEMM_MR, pixels, threads),
                   p->co, 1};
    conv_cols16(p, pixels, threads, scratch, &job);
    emu_parallel_for(scratch, (pixels + job.tile - 1) / job.tile * job.blocks, 1, conv_tiles,
                     &job);
}

static int conv_prepare_checked(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                                void **out) {
    *out = NULL;
    if (m->opnds[op->in[0]].type == NEURON_TENSOR_QUANT16_SYMM) {
        ConvParams *p = calloc(1, sizeof *p);
        if (p == NULL) return NEURON_OUT_OF_MEMORY;
        const int rc = emu_conv16_prepare(m, op, false, &p->wide);
        if (rc != NEURON_NO_ERROR) {
            free(p);
            return rc;
        }
        *out = p;
        return NEURON_NO_ERROR;
    }
    int rc = conv_prepare(m, op, num, out);
    if (rc != NEURON_NO_ERROR && *out != NULL) {
        conv_free(*out);
        *out = NULL;
    }
    return rc;
}

const EmuKernel emu_k_conv_2d = {NEURON_CONV_2D, "CONV_2D", conv_prepare_checked, conv_eval,
                                 conv_scratch, conv_free};
