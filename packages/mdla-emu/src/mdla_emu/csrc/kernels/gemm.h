/*
 * gemm.h: the 8-bit GEMM of FULLY_CONNECTED's fast path (AVX-512 VNNI on x86-64, the
 * dot-product extension on aarch64, chosen at run time), beside the portable int16 one
 * (emu_gemm_s16_blocked in kernel_common.c), which the tests also run. Its packing and the
 * exactness argument below are also CONV_2D's rows path's (gemm_rows.h), which replaced the
 * im2col tiles that ran on this GEMM.
 *
 * The convolution sum  acc[p][o] = sum_k (x[p][k] - z) * w[o][k]  (x, z, w int8; taps outside
 * the image are x = z) is computed with the byte u = x + EMU_U8_OFFSET as
 *
 *   acc[p][o] = init[o] + sum_k u[p][k] * w[o][k],   init[o] = -(z + EMU_U8_OFFSET) * sum_k w[o][k]
 *
 * an identity of integers (sum (u - OFF - z) w = sum u w - (z + OFF) sum w). x86's vpdpbusd
 * multiplies uint8 by int8, so OFF = 128 there (u in [0, 255]); aarch64's sdot multiplies int8
 * by int8, so OFF = 0 (u = x). Both add four products into an int32 lane without saturation;
 * every term is an integer and int32 addition is exact modulo 2^32, so the lane ends at the
 * true sum whenever that fits int32: |acc| <= depth * 255 * 128 < 2^31 for depth <= 2^16
 * (conv_prepare's bound). Hence the result equals the int16 path's bit for bit, whatever order
 * the lanes add in.
 *
 * Layout: depth is padded to kpad (a multiple of 4) with u = anything and w = 0; columns to
 * cpad (a multiple of EMU_U8_NR) with w = 0 and init = 0. The packed filter holds, per panel of
 * EMU_U8_NR columns, kpad/4 groups of EMU_U8_NR x 4 bytes: lane c of group g is w[o][4g..4g+3].
 * Rows of `a` are `kpad` bytes apart; `rows` is a multiple of EMU_U8_MR (padded rows computed
 * and dropped by the caller).
 *
 * MDLA_EMU_PORTABLE=1 (read at prepare) keeps the portable path on a CPU that has VNNI;
 * so does MDLA_EMU_ISA=avx2|portable on x86-64 (simd.h), which the tests use to run the AVX2
 * int16 GEMM there, and MDLA_EMU_ISA=portable on aarch64.
 */
#ifndef MDLA_EMU_GEMM_H
#define MDLA_EMU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#define EMU_U8_NR 16 /* int32 lanes of one zmm: the columns of a panel */
#define EMU_U8_MR 8  /* rows of the register tile */
#define EMU_U8_KB 4  /* bytes per vpdpbusd / sdot lane */
#if defined(__aarch64__)
#define EMU_U8_OFFSET 0 /* sdot: int8 x int8 */
#else
#define EMU_U8_OFFSET 128 /* vpdpbusd: uint8 x int8 */
#endif

/* The CPU runs the 8-bit path (AVX-512 VNNI; aarch64 dot product) and emu_isa() allows it
 * (AVX-512 on x86-64, NEON on aarch64: not under MDLA_EMU_PORTABLE=1 or MDLA_EMU_ISA=portable,
 * nor MDLA_EMU_ISA=avx2 on x86-64; simd.h). */
bool emu_gemm_u8_ready(void);

/* Pack w[co][depth] (int8) into `packed` (cpad * kpad bytes, layout above) and set
 * init[o] = -(z + EMU_U8_OFFSET) * sum_k w[o][k] (zero for padding columns). */
void emu_gemm_u8_pack(const int8_t *w, int32_t co, int32_t depth, int32_t z, int32_t kpad,
                      int32_t cpad, int8_t *packed, int32_t *init);

/* out[p][o] = init[o] + sum_k a[p][k] * w[o][k] for p < rows, o < cols; out rows `cols`
 * apart (compact, so the requantization runs them as one flat loop); `packed` and `init` hold
 * cpad = cols rounded up to EMU_U8_NR columns. Only when emu_gemm_u8_ready(). */
void emu_gemm_u8(const uint8_t *a, const int8_t *packed, const int32_t *init, int32_t *out,
                 int32_t rows, int32_t cols, int32_t kpad);

#endif /* MDLA_EMU_GEMM_H */
