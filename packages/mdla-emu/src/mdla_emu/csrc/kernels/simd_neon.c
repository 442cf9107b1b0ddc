/*
 * simd_neon.c: simd_neon.h's kernels in aarch64 NEON intrinsics: the narrow requantization,
 * the multiplier-1 depthwise rows (int8 and 16x8), MUL's formula and the 256-entry table lookup.
 *
 * Why the requantization (emu_neon_narrow4, simd_neon_rq.h) is the C one (requant_narrow,
 * kernel_common.c) lane for lane, given simd.c's argument for the x86 lanes (the same bounds hold):
 * - v = (acc + bias) * 2^left: sqshl is not needed; vshlq_s32 by a non-negative count moves the
 *   two's complement bits left, exact since the narrow case has (|acc| + |bias|) 2^left < 2^31.
 * - SRDHM: vqrdmulhq_s32(v, M) is sat((2 v M + 2^31) >> 32) with the product in full width,
 *   i.e. floor((v M + 2^30) / 2^31), the C's h; it saturates only for v = M = -2^31, and
 *   M is in [0, 2^31).
 * - RDBPOT: for right = e >= 1, RDBPOT(h, e) = floor((h - [h < 0] + 2^(e-1)) / 2^e) (write
 *   h = q 2^e + r: both give q + 1 exactly when r > 2^(e-1) - 1 + [h < 0]), which is srshl
 *   (vrshlq_s32: add 2^(e-1), then shift right arithmetically, in full width) of
 *   u = h + ((h >> 31) & nz) by -e, nz = vtst(mask, mask) (-1 where mask != 0, i.e. e >= 1);
 *   for e = 0, nz = 0: u = h, and srshl by 0 is h. u does not wrap: h >= -2^31 + 1 since
 *   M < 2^31. The same form as MUL's below (emu_neon_rdbpot, simd_neon_rq.h).
 * - clamp(clamp(t, +-2^16) + z, lo, hi) = clamp(t, lo - z, hi - z) + z (simd.c), in [-128, 127],
 *   so the two narrowing moves (xtn) to int16 and int8 change nothing.
 * Tails: the last < 8 values are copied into zero-filled blocks (M = 0, no shift: valid).
 *
 * MUL takes 16 codes a step in int16 lanes, as emu_mul_narrow_avx512 does (simd.h's proof of
 * its shift form, here with a rounding shift): vsubl_s8 gives x - z exactly in int16, vmull_s16
 * the exact product p (|p| <= 255 * 255 < 2^16), vqrdmulhq_s32 h = SRDHM(p, M) as above. With e
 * the right shift, RDBPOT(h, e) = floor((h - [h < 0] + 2^(e-1)) / 2^e) for e >= 1 (h = q 2^e + r:
 * q + 1 exactly when r > 2^(e-1) - 1 + [h < 0]), which is vrshlq_s32 (srshl: add 2^(e-1), then
 * shift right arithmetically, in full width) of u = h + ((h >> 31) & -1) by -e; for e = 0 the
 * mask is 0 and srshl by 0 is h. |h| < 2^16, so e >= 17 gives 0 as RDBPOT does: e is capped at 17.
 * t + z is exact in int32; the saturating moves to int16 and int8 are monotone and fix
 * [-128, 127], which holds [lo, hi], so the clamp after them is the clamp of t + z.
 */
#include "simd_neon.h"

#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__) && defined(__GNUC__)
#include <sys/auxv.h>

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20) /* Linux arch/arm64 uapi hwcap.h */
#endif

static bool neon_dotprod;
__attribute__((constructor)) static void detect_dotprod(void) {
    neon_dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
}

bool emu_neon_dotprod(void) { return neon_dotprod; }
#else
bool emu_neon_dotprod(void) { return false; }
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#include "simd_neon_rq.h"

/* 8 lanes from e of the constants and acc: all readable (the caller pads the tail). */
static inline int8x8_t narrow8_mem(const EmuNarrow *k, const int32_t *acc, size_t e,
                                   const EmuNeonClamp *c) {
    int32x4_t q[2];
    for (size_t h = 0; h < 2; h++) {
        const size_t i = e + 4 * h;
        const int32x4_t v = vshlq_s32(vaddq_s32(vld1q_s32(acc + i), vld1q_s32(k->bias + i)),
                                      vld1q_s32(k->left + i));
        q[h] = emu_neon_narrow4(v, vld1q_s32(k->mult + i), vld1q_s32(k->right + i),
                       vld1q_s32(k->mask + i), c);
    }
    return emu_neon_pack8(q[0], q[1]);
}

void emu_requant_narrow_neon(const EmuNarrow *k, const int32_t *acc, int8_t *out, int32_t n) {
    const EmuNeonClamp c = emu_neon_clamp(k->z, k->lo, k->hi);
    int32_t e = 0;
    for (; e + 8 <= n; e += 8) vst1_s8(out + e, narrow8_mem(k, acc, (size_t)e, &c));
    if (e == n) return;
    const size_t r = (size_t)(n - e), sz = r * sizeof(int32_t);
    int32_t a[8] = {0}, b[8] = {0}, l[8] = {0}, m[8] = {0}, s[8] = {0}, w[8] = {0};
    memcpy(a, acc + e, sz), memcpy(b, k->bias + e, sz), memcpy(l, k->left + e, sz);
    memcpy(m, k->mult + e, sz), memcpy(s, k->right + e, sz), memcpy(w, k->mask + e, sz);
    const EmuNarrow tail = {b, l, m, s, w, k->z, k->lo, k->hi};
    int8_t o[8];
    vst1_s8(o, narrow8_mem(&tail, a, 0, &c));
    memcpy(out + e, o, r);
}

/* `nb` (1 or 2) blocks of 8 channels from channel k of one pixel: every tap added in registers
 * as (x - z) * w, both int16 (|x - z| <= 255), widened into int32 lanes by smlal; s[2 b] and
 * s[2 b + 1] hold block b's sums. */
static inline __attribute__((always_inline)) void
dw_sums8(const EmuDwRow *d, const int32_t *taps, int32_t n, int32_t k, int nb, int32x4_t s[4]) {
    const int16x8_t z = vdupq_n_s16((int16_t)d->z);
    for (int q = 0; q < 4; q++) s[q] = vdupq_n_s32(0);
    for (int32_t t = 0; t < n; t++) {
        const int8_t *x = d->image + taps[2 * t] + k;
        const int32_t *w = d->filter + taps[2 * t + 1] + k;
        for (int b = 0; b < nb; b++) {
            const int16x8_t xv = vsubq_s16(vmovl_s8(vld1_s8(x + 8 * b)), z);
            /* the filter lane's low int16 is w (simd.h): xtn keeps it */
            const int16x4_t w0 = vmovn_s32(vld1q_s32(w + 8 * b));
            const int16x4_t w1 = vmovn_s32(vld1q_s32(w + 8 * b + 4));
            s[2 * b] = vmlal_s16(s[2 * b], vget_low_s16(xv), w0);
            s[2 * b + 1] = vmlal_s16(s[2 * b + 1], vget_high_s16(xv), w1);
        }
    }
}

/* Channels [k, c) of one pixel (c - k < 8) summed in C: the filter's low 16 bits are w. */
static int32_t dw_sum1(const EmuDwRow *d, const int32_t *taps, int32_t n, int32_t k) {
    int32_t s = 0;
    for (int32_t t = 0; t < n; t++)
        s += (d->image[taps[2 * t] + k] - d->z) *
             (int16_t)(uint16_t)(uint32_t)d->filter[taps[2 * t + 1] + k];
    return s;
}

void emu_dw_row_neon(const EmuDwRow *d, int32_t oy, int32_t *acc, int32_t *taps) {
    const int32_t c = d->g.c;
    int32x4_t s[4];
    for (int32_t ox = 0; ox < d->g.ow; ox++) {
        const int32_t n = emu_dw_taps(&d->g, oy, ox, taps);
        int32_t *out = acc + (size_t)ox * c;
        int32_t k = 0;
        for (; k + 8 <= c; k += 8 * (c - k >= 16 ? 2 : 1)) {
            const int nb = c - k >= 16 ? 2 : 1;
            dw_sums8(d, taps, n, k, nb, s);
            for (int q = 0; q < 2 * nb; q++) vst1q_s32(out + k + 4 * q, s[q]);
        }
        for (; k < c; k++) out[k] = dw_sum1(d, taps, n, k);
    }
}

/* 4 sums of channels e.. requantized (narrow8_mem's steps on registers). */
static inline int32x4_t dw_rq4(const EmuDwRq *q, size_t e, int32x4_t s, const EmuNeonClamp *c) {
    const int32x4_t v = vshlq_s32(vaddq_s32(s, vld1q_s32(q->bias + e)), vld1q_s32(q->left + e));
    return emu_neon_narrow4(v, vld1q_s32(q->mult + e), vld1q_s32(q->right + e),
                            vld1q_s32(q->mask + e), c);
}

void emu_dw_row_rq_neon(const EmuDwRow *d, const EmuDwRq *rq, int32_t oy, int8_t *out,
                        int32_t *taps) {
    const int32_t c = d->g.c;
    const EmuNeonClamp cl = emu_neon_clamp(rq->z, rq->lo, rq->hi);
    int32x4_t s[4];
    for (int32_t ox = 0; ox < d->g.ow; ox++) {
        const int32_t n = emu_dw_taps(&d->g, oy, ox, taps);
        int8_t *px = out + (size_t)ox * c;
        int32_t k = 0;
        for (; k + 8 <= c; k += 8 * (c - k >= 16 ? 2 : 1)) {
            const int nb = c - k >= 16 ? 2 : 1;
            dw_sums8(d, taps, n, k, nb, s);
            for (int b = 0; b < nb; b++) {
                const size_t e = (size_t)k + 8 * b;
                vst1_s8(px + e, emu_neon_pack8(dw_rq4(rq, e, s[2 * b], &cl),
                                               dw_rq4(rq, e + 4, s[2 * b + 1], &cl)));
            }
        }
        if (k == c) continue;
        int32_t tail[8];
        for (int32_t j = k; j < c; j++) tail[j - k] = dw_sum1(d, taps, n, j);
        const EmuNarrow q = {rq->bias + k, rq->left + k, rq->mult + k, rq->right + k,
                             rq->mask + k, rq->z,        rq->lo,       rq->hi};
        emu_requant_narrow_neon(&q, tail, px + k, c - k);
    }
}

/* `nq` (1 or 2) blocks of 8 channels from channel k of one pixel of the 16x8 depthwise: every
 * tap's x * w (int16 each) widened into int32 lanes by smlal/smlal2, in registers. */
static inline __attribute__((always_inline)) void
dw16_blocks8(const EmuDw16Row *d, const int32_t *taps, int32_t n, int32_t k, int nq,
             int32_t *out) {
    int32x4_t s[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
    for (int32_t t = 0; t < n; t++) {
        const int16_t *x = d->image + taps[2 * t] + k, *w = d->filter + taps[2 * t + 1] + k;
        for (int q = 0; q < nq; q++) {
            const int16x8_t xv = vld1q_s16(x + 8 * q), wv = vld1q_s16(w + 8 * q);
            s[2 * q] = vmlal_s16(s[2 * q], vget_low_s16(xv), vget_low_s16(wv));
            s[2 * q + 1] = vmlal_high_s16(s[2 * q + 1], xv, wv);
        }
    }
    for (int q = 0; q < 2 * nq; q++) vst1q_s32(out + k + 4 * q, s[q]);
}

void emu_dw16_row_neon(const EmuDw16Row *d, int32_t oy, int32_t *acc, int32_t *taps) {
    const int32_t c = d->g.c;
    for (int32_t ox = 0; ox < d->g.ow; ox++) {
        const int32_t n = emu_dw_taps(&d->g, oy, ox, taps);
        int32_t *out = acc + (size_t)ox * c;
        int32_t k = 0;
        for (; k + 16 <= c; k += 16) dw16_blocks8(d, taps, n, k, 2, out);
        for (; k + 8 <= c; k += 8) dw16_blocks8(d, taps, n, k, 1, out);
        for (; k < c; k++) {
            int32_t s = 0;
            for (int32_t t = 0; t < n; t++)
                s += (int32_t)d->image[taps[2 * t] + k] * d->filter[taps[2 * t + 1] + k];
            out[k] = s;
        }
    }
}

/* MUL's lanes: both zero points as int8 (vsubl), SRDHM's multiplier, -e (e = right capped at
 * 17), -1 or 0 (e >= 1 or not), the output zero point and the clamp in int8. */
typedef struct {
    int8x8_t z1, z2;
    int32x4_t m, shift, neg, z;
    int8x16_t lo, hi;
} MulLanes;

/* 16 codes from x (step 1, 16 readable) or x[0] (step 0) minus z as int16 (|x - z| <= 255). */
static inline void codes16(const int8_t *x, uint32_t step, int8x8_t z, int16x8_t *lo,
                           int16x8_t *hi) {
    const int8x16_t v = step == 0 ? vdupq_n_s8(x[0]) : vld1q_s8(x);
    *lo = vsubl_s8(vget_low_s8(v), z);
    *hi = vsubl_s8(vget_high_s8(v), z);
}

/* RDBPOT(SRDHM(p, m), e) + z of 4 products (the header's shift form). */
static inline int32x4_t mul_round4(const MulLanes *l, int32x4_t p) {
    const int32x4_t h = vqrdmulhq_s32(p, l->m);
    return vaddq_s32(emu_neon_rdbpot(h, l->neg, l->shift), l->z);
}

/* Two int16x8 of products' halves (x, y) as 8 outputs, saturated to int16 then int8. */
static inline int8x8_t mul8(const MulLanes *l, int16x8_t x, int16x8_t y) {
    const int32x4_t p0 = vmull_s16(vget_low_s16(x), vget_low_s16(y));
    const int32x4_t p1 = vmull_high_s16(x, y);
    return vqmovn_s16(vcombine_s16(vqmovn_s32(mul_round4(l, p0)), vqmovn_s32(mul_round4(l, p1))));
}

/* MUL's 16 outputs from 16 readable codes of each operand (or one, step 0). */
static inline int8x16_t mul16(const MulLanes *l, const int8_t *a, const int8_t *b,
                              uint32_t a_step, uint32_t b_step) {
    int16x8_t x0, x1, y0, y1;
    codes16(a, a_step, l->z1, &x0, &x1);
    codes16(b, b_step, l->z2, &y0, &y1);
    const int8x16_t q = vcombine_s8(mul8(l, x0, y0), mul8(l, x1, y1));
    return vminq_s8(vmaxq_s8(q, l->lo), l->hi);
}

void emu_mul_narrow_neon(const EmuMulNarrow *k, const int8_t *a, const int8_t *b,
                         uint32_t a_step, uint32_t b_step, uint32_t n, int8_t *out) {
    const int32_t e = k->right < 17 ? k->right : 17; /* |h| < 2^16: t = 0 from e = 17 on */
    const MulLanes l = {vdup_n_s8((int8_t)k->z1), vdup_n_s8((int8_t)k->z2),
                        vdupq_n_s32(k->mult),     vdupq_n_s32(-e),
                        vdupq_n_s32(e > 0 ? -1 : 0), vdupq_n_s32(k->z),
                        vdupq_n_s8((int8_t)k->lo), vdupq_n_s8((int8_t)k->hi)};
    uint32_t i = 0;
    for (; i + 16 <= n; i += 16)
        vst1q_s8(out + i, mul16(&l, a + i * a_step, b + i * b_step, a_step, b_step));
    if (i == n) return;
    int8_t x[16] = {0}, y[16] = {0}, o[16];
    memcpy(x, a + i * a_step, a_step ? n - i : 1);
    memcpy(y, b + i * b_step, b_step ? n - i : 1);
    vst1q_s8(o, mul16(&l, x, y, a_step, b_step));
    memcpy(out + i, o, n - i);
}

/* 16 codes: the index x + 128 is x ^ 0x80; tbl looks it up in the first 64 entries (0 when
 * the index is >= 64), each tbx in the next 64 (index - 64j wraps to >= 64 below them, where
 * tbx leaves the lane as it is). */
static inline uint8x16_t lut16(const uint8x16x4_t t[4], uint8x16_t idx) {
    const uint8x16_t step = vdupq_n_u8(64);
    uint8x16_t v = vqtbl4q_u8(t[0], idx);
    for (int j = 1; j < 4; j++) {
        idx = vsubq_u8(idx, step);
        v = vqtbx4q_u8(v, t[j], idx);
    }
    return v;
}

void emu_lut_neon(const int8_t *table, const int8_t *x, int8_t *y, uint64_t n) {
    uint8x16x4_t t[4];
    for (int j = 0; j < 4; j++) t[j] = vld1q_u8_x4((const uint8_t *)table + 64 * j);
    const uint8x16_t flip = vdupq_n_u8(0x80);
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const uint8x16_t idx = veorq_u8(vld1q_u8((const uint8_t *)x + i), flip);
        vst1q_u8((uint8_t *)y + i, lut16(t, idx));
    }
    if (i == n) return;
    uint8_t in[16] = {0}, o[16];
    memcpy(in, x + i, n - i);
    vst1q_u8(o, lut16(t, veorq_u8(vld1q_u8(in), flip)));
    memcpy(y + i, o, n - i);
}
#else
void emu_requant_narrow_neon(const EmuNarrow *k, const int32_t *acc, int8_t *out, int32_t n) {
    (void)k, (void)acc, (void)out, (void)n;
    abort(); /* unreachable: emu_isa() is EMU_ISA_NEON only on aarch64 */
}

void emu_dw_row_neon(const EmuDwRow *d, int32_t oy, int32_t *acc, int32_t *taps) {
    (void)d, (void)oy, (void)acc, (void)taps;
    abort(); /* unreachable: emu_isa() is EMU_ISA_NEON only on aarch64 */
}

void emu_dw_row_rq_neon(const EmuDwRow *d, const EmuDwRq *rq, int32_t oy, int8_t *out,
                        int32_t *taps) {
    (void)d, (void)rq, (void)oy, (void)out, (void)taps;
    abort(); /* unreachable: emu_isa() is EMU_ISA_NEON only on aarch64 */
}

void emu_dw16_row_neon(const EmuDw16Row *d, int32_t oy, int32_t *acc, int32_t *taps) {
    (void)d, (void)oy, (void)acc, (void)taps;
    abort(); /* unreachable: emu_isa() is EMU_ISA_NEON only on aarch64 */
}

void emu_mul_narrow_neon(const EmuMulNarrow *k, const int8_t *a, const int8_t *b,
                         uint32_t a_step, uint32_t b_step, uint32_t n, int8_t *out) {
    (void)k, (void)a, (void)b, (void)a_step, (void)b_step, (void)n, (void)out;
    abort(); /* unreachable: emu_isa() is EMU_ISA_NEON only on aarch64 */
}

void emu_lut_neon(const int8_t *table, const int8_t *x, int8_t *y, uint64_t n) {
    (void)table, (void)x, (void)y, (void)n;
    abort(); /* unreachable: emu_isa() is EMU_ISA_NEON only on aarch64 */
}
#endif
