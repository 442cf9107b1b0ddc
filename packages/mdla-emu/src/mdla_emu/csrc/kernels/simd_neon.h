/*
 * simd_neon.h: the aarch64 NEON twins of simd.h's x86-64 kernels, which are what the engine's
 * cpu partitions run on the phone's ARM cores. Each computes the same integers as the portable
 * C and as its x86 twin (the argument is in simd_neon.c's header); the kernels call them when
 * emu_isa() is EMU_ISA_NEON (aarch64, unless MDLA_EMU_PORTABLE=1 or MDLA_EMU_ISA=portable).
 * Elsewhere they are never called (their bodies abort).
 */
#ifndef MDLA_EMU_SIMD_NEON_H
#define MDLA_EMU_SIMD_NEON_H

#include "simd.h"

#if defined(__aarch64__) && defined(__GNUC__)
/* The dot-product extension's functions (sdot); they run only when emu_neon_dotprod(). */
#define EMU_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

/* The CPU has the dot-product extension (ARMv8.2 dotprod: HWCAP_ASIMDDP in AT_HWCAP, read once
 * at load); false off aarch64. */
bool emu_neon_dotprod(void);

/* simd.h's emu_requant_narrow_avx2, 8 int32 lanes (two q registers) at a time. */
void emu_requant_narrow_neon(const EmuNarrow *k, const int32_t *acc, int8_t *out, int32_t n);

/* simd.h's emu_dw_row_avx512 (emu_dw2_row_avx2): the int32 sums of one output row of a multiplier-1 depthwise
 * convolution, 16 then 8 channels per block (x - z as int16, one widening smlal per product). */
void emu_dw_row_neon(const EmuDwRow *d, int32_t oy, int32_t *acc, int32_t *taps);

/* simd.h's emu_dw_row_rq_avx512: emu_dw_row_neon's sums requantized in registers
 * (emu_requant_narrow_neon's steps, the same integers) and stored as int8, no int32 row; the
 * channels past the last whole 8 through emu_requant_narrow_neon. */
void emu_dw_row_rq_neon(const EmuDwRow *d, const EmuDwRq *rq, int32_t oy, int8_t *out,
                        int32_t *taps);

/* simd.h's emu_dw16_row_avx2: the 16x8 depthwise row's int32 sums, 16 then 8 channels per block
 * (x * w of two int16 widened into int32 lanes by smlal: simd.h's bounds), the tail in C. */
void emu_dw16_row_neon(const EmuDw16Row *d, int32_t oy, int32_t *acc, int32_t *taps);

/* simd.h's emu_mul_narrow_avx512: MUL's formula in int16 lanes, 16 elements at a time. */
void emu_mul_narrow_neon(const EmuMulNarrow *k, const int8_t *a, const int8_t *b,
                         uint32_t a_step, uint32_t b_step, uint32_t n, int8_t *out);

/* simd.h's emu_lut_vbmi: y[i] = table[x[i] + 128], 16 codes per four 64-byte tbl lookups. */
void emu_lut_neon(const int8_t *table, const int8_t *x, int8_t *y, uint64_t n);

/* int8 ADD / SUB (k_add.c) in lanes, 16 codes a step (simd_add_neon.c, which says why these
 * are k_add.c's integers): each side's MBQM((x - z) 2^20, M, s) computed in int32 lanes, their
 * sum or difference requantized by the output's MBQM, in the rounding given. emu_add_neon_pack
 * takes the three multipliers (the two inputs', the output's) and the input zero points; false
 * (the table serves) unless every s is in [-31, 0], M in [0, 2^31), the zero points and the
 * clamp int8. Steps are 0 or 1. */
typedef struct {
    int32_t m[3], r[3]; /* x1, x2, out: M and r = -s */
    int32_t zin[2], sign, z, lo, hi;
    bool single;
} EmuAddNeon;
bool emu_add_neon_pack(EmuAddNeon *k, const int64_t *m, const int *s, const int32_t *zin,
                       int sign, int rounding, int32_t z, int32_t lo, int32_t hi);
void emu_add_neon(const EmuAddNeon *k, const int8_t *a, const int8_t *b, uint32_t a_step,
                  uint32_t b_step, uint32_t n, int8_t *out);

/* simd.h's emu_dw4_row with the dot-product extension (simd_dw4_neon.c): the same integers,
 * four taps per sdot in blocks of 16 channels (below 16 channels, 16 / c pixels per block where
 * c divides 16, else one pixel), from its own packing of the same EmuDw4 fields (emu_dw4_free
 * frees it). emu_dw4_neon_ready(c): c >= 1, the CPU has dotprod (hwcap) and emu_isa() is
 * EMU_ISA_NEON. emu_dw4_neon_pack returns 0, or -1 when out of memory. */
int emu_dw4_neon_pack(EmuDw4 *k, const EmuDwGeom *g, const int8_t *w, int32_t z,
                      const EmuDwRq *rq);
bool emu_dw4_neon_ready(int32_t c);
void emu_dw4_neon_row(const EmuDw4 *k, const EmuDwGeom *g, const int8_t *image, int32_t oy,
                      int8_t *out, const int8_t **rows);

#endif /* MDLA_EMU_SIMD_NEON_H */
