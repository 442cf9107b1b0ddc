/*
 * simd_dw4_neon.c: simd_dw4.c's twin on aarch64 with the dot-product extension (ARMv8.2
 * dotprod, sdot): the multiplier-1 DEPTHWISE_CONV_2D row, four taps per sdot, requantized in
 * registers (emu_dw4_neon_*, simd_neon.h).
 *
 *   out[ox][c] = requant_narrow(init[c] + sum over 4 * groups taps t of x_t[c] * w_t[c])
 *   init = bias - z * sum_t w_t
 * where a tap outside the image reads a row of zero points (x = z) and the taps past kh * kw
 * have w = 0, so each adds (x - z) * w or 0 beyond init's share: the sum is bias plus the sum
 * over the taps inside the image of (x - z) * w. sdot multiplies signed bytes, so the codes go
 * in as they are (no x + 128 as vpdpbusd's unsigned operand needs). Exact: the true value,
 * bias + acc, lies inside int32 by the narrow bound (kernels.h EmuRequant.narrow:
 * 255 * sum |w| + |bias| < 2^31), so the wrapping int32 additions of init and of the products
 * (each |x w| <= 2^14) end on it whatever the order.
 *
 * Layout: blocks of 16 channels; block b covers channels [s, s + 16) with s = min(16 b, c - 16),
 * so the last block overlaps the one before when 16 does not divide c (it writes the same codes
 * again) and no load runs past a pixel's c bytes; c >= 16 (emu_dw4_neon_ready). For a group of
 * 4 taps, zip1/zip2 of the four rows' bytes then of their halfwords leave in register r, lane l
 * the 4 taps' bytes of channel s + 4 r + l: channel order, so the weights are packed
 * [blocks][groups][16 channels][4 taps] and the per-lane constants [blocks][16].
 */
#include <stdlib.h>
#include <string.h>

#include "simd_dw4_rows.h"
#include "simd_neon.h"

static int32_t dw4n_start(int32_t b, int32_t c) { return 16 * b < c - 16 ? 16 * b : c - 16; }

static void dw4n_pack_lanes(EmuDw4 *k, const EmuDwGeom *g, const int8_t *w, int32_t z,
                            const EmuDwRq *rq) {
    const int32_t taps = g->kh * g->kw;
    for (int32_t b = 0; b < k->blocks; b++)
        for (int32_t l = 0; l < 16; l++) {
            const int32_t c = dw4n_start(b, g->c) + l;
            const size_t e = (size_t)16 * b + l;
            int32_t sum = 0;
            for (int32_t t = 0; t < taps; t++) sum += w[(size_t)t * g->c + c];
            for (int32_t gr = 0; gr < k->groups; gr++)
                for (int32_t j = 0; j < 4; j++) {
                    const int32_t t = 4 * gr + j;
                    const size_t at = (((size_t)b * k->groups + gr) * 16 + l) * 4 + j;
                    k->w[at] = t < taps ? w[(size_t)t * g->c + c] : 0;
                }
            k->init[e] = rq->bias[c] - z * sum;
            k->left[e] = rq->left[c];
            k->mult[e] = rq->mult[c];
            k->right[e] = rq->right[c];
            k->mask[e] = rq->mask[c];
        }
}

int emu_dw4_neon_pack(EmuDw4 *k, const EmuDwGeom *g, const int8_t *w, int32_t z,
                      const EmuDwRq *rq) {
    memset(k, 0, sizeof *k);
    k->blocks = (g->c + 15) / 16;
    k->groups = (g->kh * g->kw + 3) / 4;
    const size_t lanes = (size_t)k->blocks * 16, taps = (size_t)g->kh * g->kw;
    k->w = malloc(lanes * k->groups * 4);
    k->init = malloc(5 * lanes * sizeof(int32_t));
    k->zrow = malloc((size_t)g->c);
    k->off = malloc(taps * sizeof *k->off);
    if (k->w == NULL || k->init == NULL || k->zrow == NULL || k->off == NULL) return -1;
    k->left = k->init + lanes;
    k->mult = k->left + lanes;
    k->right = k->mult + lanes;
    k->mask = k->right + lanes;
    memset(k->zrow, (uint8_t)(int8_t)z, (size_t)g->c);
    emu_dw4_offsets(k, g);
    dw4n_pack_lanes(k, g, w, z, rq);
    k->z_out = rq->z;
    k->lo = rq->lo;
    k->hi = rq->hi;
    return 0;
}

#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__)
#include "simd_neon_rq.h"

bool emu_dw4_neon_ready(int32_t c) {
    return c >= 16 && emu_neon_dotprod() && emu_isa() == EMU_ISA_NEON;
}

static inline int8x16_t zip16(int8x16_t a, int8x16_t b, bool high) {
    const int16x8_t x = vreinterpretq_s16_s8(a), y = vreinterpretq_s16_s8(b);
    return vreinterpretq_s8_s16(high ? vzip2q_s16(x, y) : vzip1q_s16(x, y));
}

/* 4 lanes of sums from lane e of the block's constants, requantized to codes in int32. */
static inline int32x4_t dw4n_requant(const EmuDw4 *k, size_t e, int32x4_t s,
                                     const EmuNeonClamp *c) {
    const int32x4_t v = vshlq_s32(s, vld1q_s32(k->left + e));
    return emu_neon_narrow4(v, vld1q_s32(k->mult + e), vld1q_s32(k->right + e),
                            vld1q_s32(k->mask + e), c);
}

/* Block b (16 channels from byte `at` of each row) of one pixel, stored to out[at..at + 16). */
EMU_DOTPROD static inline __attribute__((always_inline)) void
dw4n_block(const EmuDw4 *k, const int8_t *const *rows, int32_t b, int32_t at,
           const EmuNeonClamp *c, int8_t *out) {
    const size_t e = (size_t)16 * b;
    int32x4_t s0 = vld1q_s32(k->init + e), s1 = vld1q_s32(k->init + e + 4),
              s2 = vld1q_s32(k->init + e + 8), s3 = vld1q_s32(k->init + e + 12);
    const int8_t *w = k->w + e * k->groups * 4;
    for (int32_t gr = 0; gr < k->groups; gr++, w += 64) {
        const int8x16_t x0 = vld1q_s8(rows[4 * gr] + at), x1 = vld1q_s8(rows[4 * gr + 1] + at),
                        x2 = vld1q_s8(rows[4 * gr + 2] + at),
                        x3 = vld1q_s8(rows[4 * gr + 3] + at);
        const int8x16_t lo01 = vzip1q_s8(x0, x1), hi01 = vzip2q_s8(x0, x1),
                        lo23 = vzip1q_s8(x2, x3), hi23 = vzip2q_s8(x2, x3);
        s0 = vdotq_s32(s0, zip16(lo01, lo23, false), vld1q_s8(w));
        s1 = vdotq_s32(s1, zip16(lo01, lo23, true), vld1q_s8(w + 16));
        s2 = vdotq_s32(s2, zip16(hi01, hi23, false), vld1q_s8(w + 32));
        s3 = vdotq_s32(s3, zip16(hi01, hi23, true), vld1q_s8(w + 48));
    }
    const int8x8_t q0 = emu_neon_pack8(dw4n_requant(k, e, s0, c), dw4n_requant(k, e + 4, s1, c));
    const int8x8_t q1 =
        emu_neon_pack8(dw4n_requant(k, e + 8, s2, c), dw4n_requant(k, e + 12, s3, c));
    vst1q_s8(out + at, vcombine_s8(q0, q1));
}

EMU_DOTPROD void emu_dw4_neon_row(const EmuDw4 *k, const EmuDwGeom *g, const int8_t *image,
                                int32_t oy, int8_t *out, const int8_t **rows) {
    int32_t lo, hi;
    emu_dw_columns(g, &lo, &hi);
    const EmuNeonClamp c = emu_neon_clamp(k->z_out, k->lo, k->hi);
    const int32_t y0 = oy * g->stride_h - g->pad_top;
    const bool inside = y0 >= 0 && y0 + (g->kh - 1) * g->dil_h < g->h;
    for (int32_t ox = 0; ox < g->ow; ox++) {
        emu_dw4_rows(k, g, image, oy, ox, inside && ox >= lo && ox < hi, rows);
        int8_t *px = out + (size_t)ox * g->c;
        for (int32_t b = 0; b < k->blocks; b++) dw4n_block(k, rows, b, dw4n_start(b, g->c), &c, px);
    }
}
#else
bool emu_dw4_neon_ready(int32_t c) {
    (void)c;
    return false;
}

void emu_dw4_neon_row(const EmuDw4 *k, const EmuDwGeom *g, const int8_t *image, int32_t oy,
                      int8_t *out, const int8_t **rows) {
    (void)k, (void)g, (void)image, (void)oy, (void)out, (void)rows;
    abort(); /* unreachable: emu_dw4_neon_ready() is false here */
}
#endif
