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
 * again) and no load runs past a pixel's c bytes. For a group of 4 taps, zip1/zip2 of the four
 * rows' bytes then of their halfwords leave in register r, lane l the 4 taps' bytes of channel
 * s + 4 r + l: channel order, so the weights are packed [blocks][groups][16 channels][4 taps]
 * and the per-lane constants [blocks][16].
 *
 * Fewer than 16 channels: one block whose lane l holds channel l % c. Where c divides 16 at a
 * column stride of 1 (k->pix = 16 / c > 1: 8, 4, 2 and 1 channels), one block is pix adjacent
 * output pixels, as simd_dw4.c's 64 / c: pixel ox + q's tap t lies q c bytes after pixel ox's,
 * so the 16 bytes at pixel ox's tap row are tap t of all pix pixels, in their outputs' order;
 * this runs where all pix windows are interior. Every other pixel is one block whose lanes past
 * c compute codes nobody keeps: its 16-byte loads read past the pixel's c bytes, inside the
 * image (or the zero-point row, 16 bytes long) except near the image's end, where the rows are
 * first copied into a zero-filled buffer; its 16 codes are stored straight into the output row
 * (the next pixels, stored later, write their own codes over the extra ones) unless fewer than
 * 16 bytes of the row are left, where only its c codes are copied.
 */
#include <stdlib.h>
#include <string.h>

#include "simd_dw4_rows.h"
#include "simd_neon.h"

/* Block b's first channel (0 for c < 16: one block). */
static int32_t dw4n_start(int32_t b, int32_t c) {
    return c <= 16 || 16 * b < c - 16 ? 16 * b : c - 16;
}

static void dw4n_pack_lanes(EmuDw4 *k, const EmuDwGeom *g, const int8_t *w, int32_t z,
                            const EmuDwRq *rq) {
    const int32_t taps = g->kh * g->kw;
    for (int32_t b = 0; b < k->blocks; b++)
        for (int32_t l = 0; l < 16; l++) {
            const int32_t c = (dw4n_start(b, g->c) + l) % g->c; /* l % c below 16 channels */
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
    k->pix = g->stride_w == 1 && g->c < 16 && 16 % g->c == 0 ? 16 / g->c : 1;
    const size_t lanes = (size_t)k->blocks * 16, taps = (size_t)g->kh * g->kw;
    const size_t zrow = g->c < 16 ? 16 : (size_t)g->c; /* a whole block's load below 16 */
    k->w = malloc(lanes * k->groups * 4);
    k->init = malloc(5 * lanes * sizeof(int32_t));
    k->zrow = malloc(zrow);
    k->off = malloc(taps * sizeof *k->off);
    if (k->w == NULL || k->init == NULL || k->zrow == NULL || k->off == NULL) return -1;
    k->left = k->init + lanes;
    k->mult = k->left + lanes;
    k->right = k->mult + lanes;
    k->mask = k->right + lanes;
    memset(k->zrow, (uint8_t)(int8_t)z, zrow);
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
    return c >= 1 && emu_neon_dotprod() && emu_isa() == EMU_ISA_NEON;
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

/* Block b (16 channels from byte `at` of each row) of one pixel, stored to out[at..at + 16).
 * `stage` (one block below 16 channels, near the image's end): each group's rows are read
 * through a zero-filled copy of their `c` bytes. */
EMU_DOTPROD static inline __attribute__((always_inline)) void
dw4n_block(const EmuDw4 *k, const int8_t *const *rows, int32_t b, int32_t at,
           const EmuNeonClamp *c, int8_t *out, bool stage, int32_t ch) {
    const size_t e = (size_t)16 * b;
    int8_t st[4][16];
    const int8_t *r[4] = {st[0], st[1], st[2], st[3]};
    if (stage) memset(st, 0, sizeof st);
    int32x4_t s0 = vld1q_s32(k->init + e), s1 = vld1q_s32(k->init + e + 4),
              s2 = vld1q_s32(k->init + e + 8), s3 = vld1q_s32(k->init + e + 12);
    const int8_t *w = k->w + e * k->groups * 4;
    for (int32_t gr = 0; gr < k->groups; gr++, w += 64) {
        if (stage)
            for (int j = 0; j < 4; j++) memcpy(st[j], rows[4 * gr + j], (size_t)ch);
        else
            for (int j = 0; j < 4; j++) r[j] = rows[4 * gr + j] + at;
        const int8x16_t x0 = vld1q_s8(r[0]), x1 = vld1q_s8(r[1]), x2 = vld1q_s8(r[2]),
                        x3 = vld1q_s8(r[3]);
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

/* The row below 16 channels (the header's pix pixels per block, else one block per pixel). */
EMU_DOTPROD static void dw4n_row_narrow(const EmuDw4 *k, const EmuDwGeom *g,
                                        const int8_t *image, int32_t oy, int8_t *out,
                                        const int8_t **rows) {
    int32_t lo, hi;
    emu_dw_columns(g, &lo, &hi);
    const EmuNeonClamp c = emu_neon_clamp(k->z_out, k->lo, k->hi);
    const int32_t y0 = oy * g->stride_h - g->pad_top, ch = g->c;
    const bool inside = y0 >= 0 && y0 + (g->kh - 1) * g->dil_h < g->h;
    /* the last input row any tap reads inside the image, and the image's bytes */
    const int32_t y_last = y0 + (g->kh - 1) * g->dil_h < g->h ? y0 + (g->kh - 1) * g->dil_h
                                                              : g->h - 1;
    const int64_t bytes = (int64_t)g->h * g->w * ch, room = (int64_t)g->ow * ch - 16;
    for (int32_t ox = 0; ox < g->ow;) {
        const bool interior = inside && ox >= lo && ox < hi;
        emu_dw4_rows(k, g, image, oy, ox, interior, rows);
        int8_t *o = out + (size_t)ox * ch;
        if (k->pix > 1 && interior && ox + k->pix <= hi) { /* pix pixels' taps are adjacent */
            dw4n_block(k, rows, 0, 0, &c, o, false, ch);
            ox += k->pix;
            continue;
        }
        /* a tap inside the image is at or before pixel (y_last, x_last): 16 bytes from it stay
         * inside the image unless `stage` */
        const int32_t x1 = ox * g->stride_w - g->pad_left + (g->kw - 1) * g->dil_w;
        const int32_t x_last = x1 < g->w ? x1 : g->w - 1;
        const bool stage = ((int64_t)y_last * g->w + x_last) * ch + 16 > bytes;
        if (!stage && (int64_t)ox * ch <= room) {
            dw4n_block(k, rows, 0, 0, &c, o, false, ch);
        } else {
            int8_t codes[16];
            if (stage)
                dw4n_block(k, rows, 0, 0, &c, codes, true, ch);
            else
                dw4n_block(k, rows, 0, 0, &c, codes, false, ch);
            memcpy(o, codes, (size_t)ch);
        }
        ox++;
    }
}

EMU_DOTPROD void emu_dw4_neon_row(const EmuDw4 *k, const EmuDwGeom *g, const int8_t *image,
                                int32_t oy, int8_t *out, const int8_t **rows) {
    if (g->c < 16) {
        dw4n_row_narrow(k, g, image, oy, out, rows);
        return;
    }
    int32_t lo, hi;
    emu_dw_columns(g, &lo, &hi);
    const EmuNeonClamp c = emu_neon_clamp(k->z_out, k->lo, k->hi);
    const int32_t y0 = oy * g->stride_h - g->pad_top;
    const bool inside = y0 >= 0 && y0 + (g->kh - 1) * g->dil_h < g->h;
    for (int32_t ox = 0; ox < g->ow; ox++) {
        emu_dw4_rows(k, g, image, oy, ox, inside && ox >= lo && ox < hi, rows);
        int8_t *px = out + (size_t)ox * g->c;
        for (int32_t b = 0; b < k->blocks; b++)
            dw4n_block(k, rows, b, dw4n_start(b, g->c), &c, px, false, g->c);
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
