/*
 * conv.h: CONV_2D's frozen parameters (k_conv_2d.c), shared with the rows path (conv_rows.c:
 * the implicit GEMM with the requantization in the register tile, x86-64 VNNI and aarch64 NEON)
 * and the AMX paths (conv_amx.c, conv_amx_taps.c).
 */
#ifndef MDLA_EMU_CONV_H
#define MDLA_EMU_CONV_H

#include "kernels.h"

typedef struct {
    int32_t n, h, w, ci, oh, ow, co, kh, kw, depth;
    int32_t kpad, copad, tile_rows; /* depth and co padded; output pixels per tile */
    bool pointwise; /* 1x1, stride 1, no padding: output pixel q reads input pixel q */
    EmuWindow win;
    int32_t z_in;
    int16_t *filter; /* [copad][kpad], widened and zero-padded once (NULL when packed16) */
    int16_t *packed16; /* emu_gemm_s16_avx2's filter (simd.h), when emu_isa() has AVX2 */
    EmuRequant rq;
    /* the 8-bit paths (gemm.h's packing): the rows or the AMX path below; filter is NULL when
     * one is taken */
    int32_t kpad4, cpad16, tile_u8; /* depth to 4, co to EMU_U8_NR, rows per tile */
    int8_t *packed;
    int32_t *init; /* the rows path: plus the bias when rq.narrow */
    /* the rows path (conv_rows.c, when emu_gemm_rows_ready() at prepare) */
    bool rows;
    bool implicit; /* ci a multiple of 4: rows point into the input (no im2col) */
    int32_t nseg, seg; /* segments per row and their bytes (gemm_rows.h) */
    uint8_t *zrow; /* seg bytes of the input zero point's code: taps outside the image */
    int32_t *rqc; /* rq.narrow: left, mult, right, mask, cpad16 each (EmuGemmRq) */
    /* the AMX path (conv_amx.c, when emu_gemm_amx_ready() at prepare): packed,
     * init and rqc over cpad32 columns, kpad64 depth; tile_u8 rows per tile */
    bool amx;
    int32_t kpad64, cpad32;
    /* the AMX taps path (conv_amx_taps.c, stride 1; amx is true too): kpad64 = kh kw cip,
     * the copy's rows wp pixels, tap_rows output rows per tile, koff the nk chunks' offsets */
    bool taps;
    int32_t wp, nk, tap_rows;
    int32_t *koff;
    EmuConv16 *wide; /* int16 activations (conv16.c): every other field unused */
} ConvParams;

typedef struct {
    const ConvParams *p;
    const int8_t *in;
    int8_t *out;
    int32_t tile; /* output pixels per tile: the prepared size or less (conv_tile) */
    int32_t cols, blocks; /* output channels per item and items per tile (co and 1, or conv_cols;
                           * the int16 tiles' conv_cols16 orders its items block-major) */
} ConvJob;

/* Item i of a ConvJob: its tile (the return) and its output channels [*c0, *c0 + *width).
 * Item i is tile i / blocks, block i % blocks: the rows and AMX paths cut a conv whose pixels
 * make one tile by output channels (panels of the packed filter) so it splits over threads. */
static inline int64_t emu_conv_item(const ConvJob *job, int64_t i, int32_t *c0, int32_t *width) {
    *c0 = (int32_t)(i % job->blocks) * job->cols;
    *width = job->p->co - *c0 < job->cols ? job->p->co - *c0 : job->cols;
    return i / job->blocks;
}

/* The rows path: after the common fields and rq are set, pack the filter w [co][depth] and
 * freeze its constants; its scratch bytes for `tile` rows; the tiles [begin, end) of a
 * ConvJob (an EmuTaskFn). */
int emu_conv_rows_prepare(ConvParams *p, const int8_t *w);
size_t emu_conv_rows_scratch(const ConvParams *p);
void emu_conv_rows_tiles(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch);

/* The im2col row of codes of output pixel (b, oy, ox): each tap's ci codes, or z_in outside
 * the image, then zeros up to kpad. A kernel row whose taps all lie inside the image is one run
 * of kw * ci input bytes (dilation 1). */
void emu_conv_im2col_codes(const ConvParams *p, const int8_t *in, int32_t b, int32_t oy,
                           int32_t ox, int8_t *restrict col, int32_t kpad);

/* rq.narrow: init += bias (modulo 2^32, gemm_rows.h) and rqc = left, mult, right, mask, `cpad`
 * entries each (padding zeros). */
int emu_conv_fold_requant(ConvParams *p, int32_t cpad);

/* The AMX path (gemm_amx.h): as the rows path's three. */
int emu_conv_amx_prepare(ConvParams *p, const int8_t *w);
size_t emu_conv_amx_scratch(const ConvParams *p);
void emu_conv_amx_tiles(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch);

/* The AMX taps path (conv_amx_taps.c): taken by emu_conv_amx_prepare; its scratch bytes; the
 * tasks of a ConvJob whose tile is whole output rows (tile / ow of them). */
int emu_conv_taps_prepare(ConvParams *p, const int8_t *w);
size_t emu_conv_taps_scratch(const ConvParams *p);
void emu_conv_taps_tiles(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch);

#endif /* MDLA_EMU_CONV_H */
