/*
 * simd_neon_rq.h: the narrow requantization in NEON lanes that more than one aarch64 file
 * inlines (simd_neon.c, simd_dw4_neon.c). Only included on aarch64 with NEON; why narrow4 is
 * requant_narrow of kernel_common.c lane for lane is in simd_neon.c's header.
 */
#ifndef MDLA_EMU_SIMD_NEON_RQ_H
#define MDLA_EMU_SIMD_NEON_RQ_H

#include <arm_neon.h>
#include <stdint.h>

typedef struct {
    int32x4_t z, lo, hi; /* lo and hi minus z */
} EmuNeonClamp;

static inline EmuNeonClamp emu_neon_clamp(int32_t z, int32_t lo, int32_t hi) {
    return (EmuNeonClamp){vdupq_n_s32(z), vdupq_n_s32(lo - z), vdupq_n_s32(hi - z)};
}

/* RDBPOT(h, e) as one rounding shift (simd_neon.c's header): srshl of
 * u = h + ((h >> 31) & neg) = h - [h < 0] (where neg is -1) by nshift = -e, with neg -1 in the
 * lanes with e >= 1 and 0 in the others (e = 0: u = h, srshl by 0 is h). */
static inline int32x4_t emu_neon_rdbpot(int32x4_t h, int32x4_t neg, int32x4_t nshift) {
    return vrshlq_s32(vaddq_s32(h, vandq_s32(vshrq_n_s32(h, 31), neg)), nshift);
}

/* 4 lanes of v = (acc + bias) * 2^left: SRDHM by m, RDBPOT by right (mask = 2^right - 1:
 * emu_neon_rdbpot with neg -1 where mask != 0), then clamp(., lo - z, hi - z) + z. */
static inline int32x4_t emu_neon_narrow4(int32x4_t v, int32x4_t m, int32x4_t right,
                                         int32x4_t mask, const EmuNeonClamp *c) {
    const int32x4_t h = vqrdmulhq_s32(v, m);
    const int32x4_t nz = vreinterpretq_s32_u32(vtstq_s32(mask, mask));
    const int32x4_t t = emu_neon_rdbpot(h, nz, vnegq_s32(right));
    return vaddq_s32(vminq_s32(vmaxq_s32(t, c->lo), c->hi), c->z);
}

/* Two int32x4 of values in [-128, 127] as 8 int8. */
static inline int8x8_t emu_neon_pack8(int32x4_t a, int32x4_t b) {
    return vmovn_s16(vcombine_s16(vmovn_s32(a), vmovn_s32(b)));
}

#endif /* MDLA_EMU_SIMD_NEON_RQ_H */
