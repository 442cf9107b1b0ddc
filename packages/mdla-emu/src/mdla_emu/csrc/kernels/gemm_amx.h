/*
 * gemm_amx.h: CONV_2D's 8-bit GEMM on Intel AMX (TDPBSSD, int8 x int8 into int32 tiles), the
 * x86-64 path taken before the AVX-512 VNNI rows GEMM (gemm_rows.h) when the CPU has AMX-INT8
 * and Linux grants the process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM).
 *
 * Sums: for p < rows, o < cols
 *
 *   s[p][o] = init[o] + sum_k x[p][k] * w[o][k]        (x the int8 codes, w the int8 weights)
 *
 * with init[o] = -z * sum_k w[o][k] (+ the bias when the requantization runs here), the
 * identity sum_k (x - z) w = sum_k x w - z sum_k w of integers. Exact: each TDPBSSD adds dot
 * products of four int8 pairs into an int32 element; every partial sum of the k terms is at most
 * depth * 128 * 128 <= 2^30 in magnitude (depth <= 2^16, conv_prepare), so no element ever
 * wraps or saturates, whatever the order of the additions; adding init is modulo 2^32 in an
 * int32 lane and the true final value fits int32, so it is reached exactly (gemm_rows.h).
 *
 * Layout: the depth is padded to kpad (a multiple of 64, one tile's row of bytes) with w = 0,
 * so the codes there may be anything; the columns to a multiple of 32 (two panels) with w = 0.
 * The filter is gemm.h's packing (panels of EMU_U8_NR = 16 columns, per group of 4 k a row of
 * 16 x 4 bytes), which is TDPBSSD's B operand as it is: the 16 groups of a 64-byte depth chunk
 * are one 16 x 64 tile, 64 bytes apart. `a` holds rows of kpad codes `lda` bytes apart, and rows
 * up to `rows` rounded up to 32 must be readable (those past `rows` are computed and dropped).
 *
 * Register tiling: 32 rows x 32 columns in the four accumulator tiles (2 x 2), two row tiles
 * and two column tiles loaded per 64 bytes of depth. The finished block is stored to a 4 KiB
 * buffer and requantized there (narrow: simd.c's lanes, two rows packed to 64 int8 codes per
 * vector) or its int32 sums stored.
 *
 * MDLA_EMU_AMX=0 keeps the VNNI rows path on a CPU with AMX (tests run both); everything that
 * turns the 8-bit GEMM off (MDLA_EMU_PORTABLE=1, MDLA_EMU_ISA=avx2|portable) turns this off.
 */
#ifndef MDLA_EMU_GEMM_AMX_H
#define MDLA_EMU_GEMM_AMX_H

#include <stdbool.h>
#include <stdint.h>

#include "gemm_rows.h"

#define EMU_AMX_KB 64 /* depth bytes per tile row */
#define EMU_AMX_MR 32 /* rows of the register block */
#define EMU_AMX_NR 32 /* columns of the register block */

/* The rows of emu_gemm_amx_gather: block j (32 rows) is the 16-row tiles tiles[2 j] and
 * tiles[2 j + 1], each of 16 rows lda apart; the 64-byte depth chunk c (packed depth 64 c ..
 * 64 c + 63) of a row lies at row + koff[c] (at row + 64 c when koff is NULL); row 16 t + i's
 * result goes to rowp[16 t + i] (NULL: computed and dropped). */
typedef struct {
    const int8_t *const *tiles;
    int32_t nblocks, lda;
    const int32_t *koff;
    int32_t nk; /* depth chunks: the packed depth kpad is 64 nk */
    void *const *rowp;
} EmuAmxRows;

/* AMX-INT8 on this CPU, the tile data permitted to this process, and not turned off. */
bool emu_gemm_amx_ready(void);

/* Pack w[co][depth] into `packed` (cpad * kpad bytes, gemm.h's layout of w itself) and set
 * init[o] = -z * sum_k w[o][k] (cpad entries; padding columns 0). cpad a multiple of 32. */
void emu_gemm_amx_pack(const int8_t *w, int32_t co, int32_t depth, int32_t z, int32_t kpad,
                       int32_t cpad, int8_t *packed, int32_t *init);

/* s as above for p < rows, o < cols; with rq (its arrays cpad entries), out is int8 and
 * out[p * ldo + o] = requant_narrow(s) (init holding the bias); without, out is int32 and
 * out[p * ldo + o] = s. Only when emu_gemm_amx_ready(). */
void emu_gemm_amx(const int8_t *a, int32_t lda, int32_t rows, const int8_t *packed, int32_t kpad,
                  const int32_t *init, const EmuGemmRq *rq, void *out, int32_t ldo, int32_t cols);

/* s as above for the rows of `a` (gemm_amx.h's layout over a->nk * 64 depth) into their row
 * pointers, o < cols: int8 requant_narrow(s) with rq, else the int32 s. Only when
 * emu_gemm_amx_ready(). */
void emu_gemm_amx_gather(const EmuAmxRows *a, const int8_t *packed, const int32_t *init,
                         const EmuGemmRq *rq, int32_t cols);

#endif /* MDLA_EMU_GEMM_AMX_H */
