/*
 * gemm_rows.h: the 8-bit GEMM (gemm.h's packing and exactness: AVX-512 VNNI on x86-64 as below,
 * NEON on aarch64 as the last paragraph says) with each row of `a` given by pointers, one per
 * segment of its depth, and the narrow requantization done on the register tile.
 *
 * Operand roles: vpdpbusd multiplies uint8 by int8. Here the weights are the unsigned operand,
 * packed as w' = w + 128 (w ^ 0x80, in [1, 255]), and the rows are the int8 codes x themselves
 * (broadcast straight from memory: no per-load offset). Then
 *
 *   sum_k (x - z) * w = sum_k x * w' - 128 * sum_k x - z * sum_k w
 *
 * an identity of integers: init[o] = -z * sum_k w[o][k] (per column, the packing's) and
 * corr[p] = -128 * sum_k x[p][k] (per row, summed here with vpsadbw) are added to the dot
 * products. Each lane adds four
 * products |x * w'| <= 128 * 255 without saturation, modulo 2^32; the true sum fits int32
 * (depth <= 2^16, gemm.h), so the lane ends exactly at it, in any order. Depth padding (kpad
 * past the filter's depth) has w' = 128, so the rows hold x = 0 there.
 *
 * Rows by pointers: CONV_2D's implicit GEMM. With the filter's depth ordered (tap, channel),
 * the depth of output pixel p is kh * kw segments of ci bytes, segment (i, j) being the input
 * pixel that tap reads (or a row of the input zero point when the tap falls outside the image:
 * it adds (z - z) * w = 0, as im2col's padding did). The terms are those of the im2col rows,
 * so the same sums.
 *
 * Requantization in the tile: when the output pipeline is narrow (kernels.h EmuRequant: double
 * rounding, (|acc| + |bias|) * 2^max(s, 0) < 2^31), the accumulators start at init + bias
 * (formed modulo 2^32: int32 lane additions are modulo 2^32 and the true final value fits, so
 * it is reached exactly) and each finished tile runs simd.c's narrow requantization (the same
 * integers as requant_narrow, the left shift included) and stores int8 outputs: no int32 row
 * buffer.
 *
 * On aarch64 (EMU_ROWS_NEON: gemm_rows_neon.c) sdot and smull multiply signed bytes: the weights
 * are packed as w (EMU_U8_OFFSET is 0, so init = -z * sum_k w as here), the rows are the codes and
 * there is no row correction; with dotprod or without (ARMv8.0), whenever emu_isa() is NEON.
 */
#ifndef MDLA_EMU_GEMM_ROWS_H
#define MDLA_EMU_GEMM_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__)
#define EMU_ROWS_NEON 1
#else
#define EMU_ROWS_NEON 0
#endif

/* The narrow requantization per column (cpad entries each: padding columns any value) */
typedef struct {
    const int32_t *left, *mult, *right, *mask;
    int32_t z, lo, hi;
} EmuGemmRq;

/* The EmuGemmRq over `q`, the four cpad-long arrays (left, mult, right, mask) one after another
 * as conv.h's rqc holds them; every array NULL when q is (the requantization is not narrow:
 * no offsets on a null pointer). */
static inline EmuGemmRq emu_gemm_rq(const int32_t *q, size_t cpad, int32_t z, int32_t lo,
                                    int32_t hi) {
    EmuGemmRq rq = {q, NULL, NULL, NULL, z, lo, hi};
    if (q != NULL) {
        rq.mult = q + cpad;
        rq.right = q + 2 * cpad;
        rq.mask = q + 3 * cpad;
    }
    return rq;
}

/* `rq` from column c0 on (the columns of a block of the filter's panels). */
static inline EmuGemmRq emu_gemm_rq_at(EmuGemmRq rq, int32_t c0) {
    if (rq.left != NULL) {
        rq.left += c0;
        rq.mult += c0;
        rq.right += c0;
        rq.mask += c0;
    }
    return rq;
}

/* Row pointers: per block of EMU_U8_MR rows, nseg x EMU_U8_MR pointers ([block][seg][row]),
 * each to `seg` readable bytes (seg a multiple of 4; nseg * seg = the packed depth kpad). */
typedef struct {
    const uint8_t *const *ptr;
    int32_t nseg, seg;
    int32_t rows; /* output rows stored; blocks = rows rounded up to EMU_U8_MR */
} EmuGemmRows;

/* AVX-512 VNNI on this x86-64 CPU and emu_gemm_u8_ready() (the environment's caps); on
 * aarch64, emu_isa() is EMU_ISA_NEON. */
bool emu_gemm_rows_ready(void);

/* Pack w[co][depth] as gemm.h's layout of w' = w + 128 (aarch64: w' = w) into `packed`
 * (cpad * kpad bytes) and set init[o] = -z * sum_k w[o][k] (cpad entries, padding columns any
 * value). */
void emu_gemm_rows_pack(const int8_t *w, int32_t co, int32_t depth, int32_t z, int32_t kpad,
                        int32_t cpad, int8_t *packed, int32_t *init);

/* For p < rows, o < cols: s = init[o] + corr[p] + sum_k x[p][k] * w'[o][k]; with rq, out is
 * int8 and out[p * ldo + o] = requant_narrow(s) (init holding the bias); without, out is int32
 * and out[p * ldo + o] = s. Only when emu_gemm_rows_ready(). */
void emu_gemm_rows(const EmuGemmRows *a, const int8_t *packed, const int32_t *init,
                   const EmuGemmRq *rq, void *out, int32_t ldo, int32_t cols);

#endif /* MDLA_EMU_GEMM_ROWS_H */
