/*
 * simd_add_neon.c: int8 ADD / SUB (k_add.c) in aarch64 NEON lanes, 16 codes a step, instead of
 * one 256 x 256 table read per code (emu_add_neon_*, simd_neon.h). Where simd_add.c looks each
 * side's value up in byte planes (a 256-entry table per byte, one vpermi2b pair per 64 codes),
 * this computes it: NEON's tbl reaches 64 bytes per instruction, so the eight planes would take
 * 32 tbl/tbx and 32 table loads per 16 codes, against a handful of multiplies here, all of
 * whose constants stay in registers.
 *
 * The integers are k_add.c's, lane for lane:
 *   a = MBQM((x - z1) 2^20, M1, s1),  b = MBQM((y - z2) 2^20, M2, s2)
 *   out = clamp(MBQM(a +- b, Mo, so) + z, lo, hi)
 * with every s <= 0 (r = -s in [0, 31]: arith.h's multipliers; k_add.c's input multipliers
 * are at most 0.5, and the output one is checked by emu_add_neon_pack). The int32 values
 * (x - z) 2^20 (|.| <= 255 2^20 < 2^28), a, b (|.| <= their argument: M < 2^31) and a +- b
 * (< 2^29) never leave int32, so neither `[arith] accumulator` fact changes anything.
 * - double rounding: MBQM = RDBPOT(SRDHM(v, M), r): sqrdmulh then simd_neon_rq.h's
 *   emu_neon_rdbpot, simd_neon.c's argument (M in [0, 2^31), h >= -2^31 + 1, any r in [0, 31]).
 * - single rounding: MBQM = (v M + 2^(30 + r)) >> (31 + r), which is srshl of the exact int64
 *   product p = v M (smull) by -(31 + r): srshl adds the rounding constant 2^(30 + r) and shifts
 *   right arithmetically in full width. |p| < 2^59, so the result (|.| < 2^28) fits int32 and
 *   xtn keeps it.
 * The output's t + z is exact in int32 (|t| < 2^29); the saturating moves to int16 and int8 are
 * monotone and fix [-128, 127], which holds [lo, hi], so the clamp after them is the clamp of
 * t + z (as MUL's lanes, simd_neon.c). Operand steps are 0 (one code for every element, whose
 * value is computed once) or 1; the tail (< 16 codes) runs on zero-filled copies.
 */
#include <stdlib.h>
#include <string.h>

#include "simd_neon.h"

bool emu_add_neon_pack(EmuAddNeon *k, const int64_t *m, const int *s, const int32_t *zin,
                       int sign, int rounding, int32_t z, int32_t lo, int32_t hi) {
    for (int i = 0; i < 3; i++) {
        if (s[i] > 0 || s[i] < -31 || m[i] < 0 || m[i] >= (INT64_C(1) << 31)) return false;
        k->m[i] = (int32_t)m[i];
        k->r[i] = -s[i];
    }
    for (int i = 0; i < 2; i++) {
        if (zin[i] < -128 || zin[i] > 127) return false;
        k->zin[i] = zin[i];
    }
    if (lo < -128 || hi > 127 || lo > hi) return false;
    k->sign = sign;
    k->single = rounding == 1;
    k->z = z;
    k->lo = lo;
    k->hi = hi;
    return true;
}

#if defined(__aarch64__) && defined(__ARM_NEON)
#include "simd_neon_rq.h"

/* One MBQM(., M, -r) in lanes: M, and the shifts of either rounding. */
typedef struct {
    int32x4_t m, nshift, neg; /* double: -r, and -1 where r >= 1 (else 0) */
    int64x2_t shift64;        /* single: -(31 + r) */
} MbqmLanes;

static MbqmLanes mbqm_lanes(int32_t m, int32_t r) {
    return (MbqmLanes){vdupq_n_s32(m), vdupq_n_s32(-r), vdupq_n_s32(r > 0 ? -1 : 0),
                       vdupq_n_s64(-(31 + (int64_t)r))};
}

static inline __attribute__((always_inline)) int32x4_t mbqm4(const MbqmLanes *q, bool single,
                                                             int32x4_t v) {
    if (single) {
        const int64x2_t lo = vrshlq_s64(vmull_s32(vget_low_s32(v), vget_low_s32(q->m)), q->shift64);
        const int64x2_t hi = vrshlq_s64(vmull_high_s32(v, q->m), q->shift64);
        return vcombine_s32(vmovn_s64(lo), vmovn_s64(hi));
    }
    return emu_neon_rdbpot(vqrdmulhq_s32(v, q->m), q->neg, q->nshift);
}

/* One side's values MBQM((x - z) 2^20, M, -r) of 16 codes (16 readable, or x[0] for step 0),
 * in code order. */
static inline __attribute__((always_inline)) void
side16(const int8_t *x, uint32_t step, int8x8_t z, const MbqmLanes *q, bool single,
       int32x4_t v[4]) {
    const int8x16_t c = step == 0 ? vdupq_n_s8(x[0]) : vld1q_s8(x);
    const int16x8_t d0 = vsubl_s8(vget_low_s8(c), z), d1 = vsubl_s8(vget_high_s8(c), z);
    v[0] = mbqm4(q, single, vshlq_n_s32(vmovl_s16(vget_low_s16(d0)), 20));
    v[1] = mbqm4(q, single, vshlq_n_s32(vmovl_high_s16(d0), 20));
    v[2] = mbqm4(q, single, vshlq_n_s32(vmovl_s16(vget_low_s16(d1)), 20));
    v[3] = mbqm4(q, single, vshlq_n_s32(vmovl_high_s16(d1), 20));
}

typedef struct {
    int8x8_t z1, z2;
    MbqmLanes a, b, o;
    int32x4_t z;
    int8x16_t lo, hi;
    int sign;
} AddLanes;

/* 16 outputs from the two sides' values. */
static inline __attribute__((always_inline)) int8x16_t out16(const AddLanes *l, bool single,
                                                             const int32x4_t u[4],
                                                             const int32x4_t v[4]) {
    int16x4_t h[4];
    for (int j = 0; j < 4; j++) {
        const int32x4_t s = l->sign > 0 ? vaddq_s32(u[j], v[j]) : vsubq_s32(u[j], v[j]);
        h[j] = vqmovn_s32(vaddq_s32(mbqm4(&l->o, single, s), l->z));
    }
    const int8x16_t q = vcombine_s8(vqmovn_s16(vcombine_s16(h[0], h[1])),
                                    vqmovn_s16(vcombine_s16(h[2], h[3])));
    return vminq_s8(vmaxq_s8(q, l->lo), l->hi);
}

/* 16 outputs; a side of step 0 reads its precomputed values. */
static inline __attribute__((always_inline)) int8x16_t
add16(const AddLanes *l, bool single, const int8_t *a, const int8_t *b, uint32_t a_step,
      uint32_t b_step, const int32x4_t ua[4], const int32x4_t vb[4]) {
    int32x4_t u[4], v[4];
    if (a_step) side16(a, 1, l->z1, &l->a, single, u);
    if (b_step) side16(b, 1, l->z2, &l->b, single, v);
    return out16(l, single, a_step ? u : ua, b_step ? v : vb);
}

static inline __attribute__((always_inline)) void
add_run(const EmuAddNeon *k, bool single, const int8_t *a, const int8_t *b, uint32_t a_step,
        uint32_t b_step, uint32_t n, int8_t *out) {
    const AddLanes l = {vdup_n_s8((int8_t)k->zin[0]),
                        vdup_n_s8((int8_t)k->zin[1]),
                        mbqm_lanes(k->m[0], k->r[0]),
                        mbqm_lanes(k->m[1], k->r[1]),
                        mbqm_lanes(k->m[2], k->r[2]),
                        vdupq_n_s32(k->z),
                        vdupq_n_s8((int8_t)k->lo),
                        vdupq_n_s8((int8_t)k->hi),
                        k->sign};
    int32x4_t ua[4], vb[4]; /* the step-0 sides' values, once */
    side16(a, 0, l.z1, &l.a, single, ua);
    side16(b, 0, l.z2, &l.b, single, vb);
    uint32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const int8_t *x = a + i * a_step, *y = b + i * b_step;
        vst1q_s8(out + i, add16(&l, single, x, y, a_step, b_step, ua, vb));
    }
    if (i == n) return;
    int8_t x[16] = {0}, y[16] = {0}, o[16];
    memcpy(x, a + i * a_step, a_step ? n - i : 1);
    memcpy(y, b + i * b_step, b_step ? n - i : 1);
    vst1q_s8(o, add16(&l, single, x, y, a_step, b_step, ua, vb));
    memcpy(out + i, o, n - i);
}

void emu_add_neon(const EmuAddNeon *k, const int8_t *a, const int8_t *b, uint32_t a_step,
                  uint32_t b_step, uint32_t n, int8_t *out) {
    if (k->single)
        add_run(k, true, a, b, a_step, b_step, n, out);
    else
        add_run(k, false, a, b, a_step, b_step, n, out);
}
#else
void emu_add_neon(const EmuAddNeon *k, const int8_t *a, const int8_t *b, uint32_t a_step,
                  uint32_t b_step, uint32_t n, int8_t *out) {
    (void)k, (void)a, (void)b, (void)a_step, (void)b_step, (void)n, (void)out;
    abort(); /* unreachable: emu_isa() is EMU_ISA_NEON only on aarch64 */
}
#endif
