/*
 * gemm_rows_neon.c: emu_gemm_rows (gemm_rows.h) on aarch64, the twin of gemm_rows.c's AVX-512
 * VNNI kernel: rows given by segment pointers (CONV_2D's implicit GEMM, conv_rows.c) and the
 * narrow requantization on the register tile, int8 stored from it.
 *
 * Operands: sdot and smull multiply signed bytes, so the rows are the int8 codes x and the
 * weights w as they are (emu_gemm_rows_pack packs w unflipped here: EMU_U8_OFFSET is 0), init
 * is -z * sum_k w (plus the bias when narrow, emu_conv_fold_requant) and there is no row
 * correction:  s = init[o] + sum_k x[p][k] * w[o][k] = bias + sum_k (x - z) * w.
 *
 * Two variants, chosen per call by hwcap:
 * - dot product (ARMv8.2 dotprod): a tile of 4 rows x 16 columns (one packed panel), 16 int32x4
 *   accumulators starting at init; per 16 bytes of a segment one 16-byte load per row and
 *   sdot by lane (vdotq_laneq_s32: lane l of the row's register is its bytes 4l..4l+3 against
 *   the weight group of those 4 k), the last < 16 bytes of a segment 4 at a time (no load past a
 *   segment's end).
 * - ARMv8.0: a tile of 4 rows x 8 columns (two weight vectors, 4 columns x 4 k each): smull of
 *   the row's 4 bytes (repeated) by the low and high halves of a weight vector gives the 16
 *   exact int16 products (|x w| <= 2^14), sadalp adds adjacent pairs into int32 lanes (lane
 *   2c + h of the low register: column c, k = 2h, 2h + 1), and at the end addp of the two
 *   registers of a vector gives its 4 columns' sums, to which init is added.
 * Exactness (gemm.h, gemm_rows.h): every lane addition is modulo 2^32, the products and pair
 * sums are exact, and the final s lies in int32 (depth <= 2^16; with the bias folded, the narrow
 * bound), so the lane ends exactly on it whatever the order.
 *
 * Store: narrow (rq) as simd_neon.c's emu_neon_narrow4 on s * 2^left, 8 columns a step packed
 * to int8; else the int32 sums. Columns at or past `cols` and rows at or past `rows` are never
 * stored.
 */
#include "gemm_rows.h"

#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "kernels.h"
#include "simd.h"
#include "simd_neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__)
#include <arm_neon.h>

#include "simd_neon_rq.h"

#define MR EMU_U8_MR /* rows per block of the pointer table */
#define TR 4         /* rows per register tile: half a block */

/* One tile's place: rows [0, nr) of the tile stored from out (rows ldo elements apart). */
typedef struct {
    const uint8_t *const *ptr; /* the block's table from the tile's first row */
    int32_t nseg, seg, nr;
    const int8_t *w;     /* the panel's packed weights */
    const int32_t *init; /* the tile's first column */
    const EmuGemmRq *rq; /* at the tile's first column, or NULL */
    void *out;           /* the tile's first row and column */
    int32_t ldo, ncols;  /* columns stored: at most 16 (dot) or 8 */
} RowsTile;

/* 8 columns of row r from a and b (columns 0-3, 4-7): requantized to int8 or the int32 sums;
 * n < 8 stores only the first n. */
static inline __attribute__((always_inline)) void store8(const RowsTile *t, int r, int32_t c,
                                                         int32x4_t a, int32x4_t b, int32_t n) {
    if (t->rq == NULL) {
        int32_t *dst = (int32_t *)t->out + (size_t)r * t->ldo + c;
        int32_t tmp[8];
        vst1q_s32(tmp, a), vst1q_s32(tmp + 4, b);
        memcpy(dst, tmp, (size_t)n * sizeof *tmp);
        return;
    }
    const EmuGemmRq *q = t->rq;
    const EmuNeonClamp cl = emu_neon_clamp(q->z, q->lo, q->hi);
    const int32x4_t va = vshlq_s32(a, vld1q_s32(q->left + c)),
                    vb = vshlq_s32(b, vld1q_s32(q->left + c + 4));
    const int8x8_t y = emu_neon_pack8(
        emu_neon_narrow4(va, vld1q_s32(q->mult + c), vld1q_s32(q->right + c),
                         vld1q_s32(q->mask + c), &cl),
        emu_neon_narrow4(vb, vld1q_s32(q->mult + c + 4), vld1q_s32(q->right + c + 4),
                         vld1q_s32(q->mask + c + 4), &cl));
    int8_t *dst = (int8_t *)t->out + (size_t)r * t->ldo + c;
    if (n == 8) {
        vst1_s8(dst, y);
    } else {
        int8_t tmp[8];
        vst1_s8(tmp, y);
        memcpy(dst, tmp, (size_t)n);
    }
}

/* Group g of 4 k (bytes 4g..4g+3 of each row's register x[r]) into the tile's accumulators:
 * the lane is an immediate, hence a macro. */
#define DOT_GROUP(g)                                                                           \
    do {                                                                                       \
        int8x16_t b[4];                                                                        \
        for (int v = 0; v < 4; v++) b[v] = vld1q_s8(w + 64 * (g) + 16 * v);                  \
        for (int r = 0; r < TR; r++)                                                           \
            for (int v = 0; v < 4; v++) acc[r][v] = vdotq_laneq_s32(acc[r][v], b[v], x[r], g); \
    } while (0)

/* The sums of a tile of TR rows x 16 columns with sdot, from init. */
EMU_DOTPROD static void tile_dot(const RowsTile *t) {
    int32x4_t acc[TR][4];
    for (int v = 0; v < 4; v++) {
        const int32x4_t i = vld1q_s32(t->init + 4 * v);
        for (int r = 0; r < TR; r++) acc[r][v] = i;
    }
    const int8_t *w = t->w;
    for (int32_t s = 0; s < t->nseg; s++) {
        const int8_t *row[TR];
        for (int r = 0; r < TR; r++) row[r] = (const int8_t *)t->ptr[(size_t)s * MR + r];
        int32_t k = 0;
        for (; k + 16 <= t->seg; k += 16, w += 4 * EMU_U8_KB * EMU_U8_NR) {
            int8x16_t x[TR];
            for (int r = 0; r < TR; r++) x[r] = vld1q_s8(row[r] + k);
            DOT_GROUP(0);
            DOT_GROUP(1);
            DOT_GROUP(2);
            DOT_GROUP(3);
        }
        for (; k < t->seg; k += EMU_U8_KB, w += EMU_U8_KB * EMU_U8_NR) {
            int8x16_t b[4];
            for (int v = 0; v < 4; v++) b[v] = vld1q_s8(w + 16 * v);
            for (int r = 0; r < TR; r++) {
                int32_t q;
                memcpy(&q, row[r] + k, sizeof q);
                const int8x16_t x = vreinterpretq_s8_s32(vdupq_n_s32(q));
                for (int v = 0; v < 4; v++) acc[r][v] = vdotq_s32(acc[r][v], b[v], x);
            }
        }
    }
    for (int r = 0; r < t->nr; r++) {
        store8(t, r, 0, acc[r][0], acc[r][1], t->ncols < 8 ? t->ncols : 8);
        if (t->ncols > 8) store8(t, r, 8, acc[r][2], acc[r][3], t->ncols - 8);
    }
}

/* The sums of a tile of TR rows x 8 columns (vectors 0 and 1 of the 16-column groups from
 * t->w) without the dot product: smull + sadalp into pair sums, addp, + init. */
static void tile_pairs(const RowsTile *t) {
    int32x4_t acc[TR][2][2]; /* [row][vector][low, high half of the vector's columns] */
    for (int r = 0; r < TR; r++)
        for (int v = 0; v < 2; v++) acc[r][v][0] = acc[r][v][1] = vdupq_n_s32(0);
    const int8_t *w = t->w;
    for (int32_t s = 0; s < t->nseg; s++) {
        const int8_t *row[TR];
        for (int r = 0; r < TR; r++) row[r] = (const int8_t *)t->ptr[(size_t)s * MR + r];
        for (int32_t k = 0; k < t->seg; k += EMU_U8_KB, w += EMU_U8_KB * EMU_U8_NR) {
            const int8x16_t b0 = vld1q_s8(w), b1 = vld1q_s8(w + 16);
            for (int r = 0; r < TR; r++) {
                int32_t q;
                memcpy(&q, row[r] + k, sizeof q);
                const int8x16_t x = vreinterpretq_s8_s32(vdupq_n_s32(q));
                const int8x8_t xl = vget_low_s8(x);
                acc[r][0][0] = vpadalq_s16(acc[r][0][0], vmull_s8(xl, vget_low_s8(b0)));
                acc[r][0][1] = vpadalq_s16(acc[r][0][1], vmull_high_s8(x, b0));
                acc[r][1][0] = vpadalq_s16(acc[r][1][0], vmull_s8(xl, vget_low_s8(b1)));
                acc[r][1][1] = vpadalq_s16(acc[r][1][1], vmull_high_s8(x, b1));
            }
        }
    }
    const int32x4_t i0 = vld1q_s32(t->init), i1 = vld1q_s32(t->init + 4);
    for (int r = 0; r < t->nr; r++)
        store8(t, r, 0, vaddq_s32(vpaddq_s32(acc[r][0][0], acc[r][0][1]), i0),
               vaddq_s32(vpaddq_s32(acc[r][1][0], acc[r][1][1]), i1), t->ncols);
}

/* Panel by panel (its weights stay in cache over the rows), block by block, half by half. */
void emu_gemm_rows(const EmuGemmRows *a, const int8_t *packed, const int32_t *init,
                   const EmuGemmRq *rq, void *out, int32_t ldo, int32_t cols) {
    const size_t panel = (size_t)a->nseg * a->seg * EMU_U8_NR;
    const size_t row_bytes = (size_t)ldo * (rq == NULL ? sizeof(int32_t) : 1);
    const size_t col_bytes = rq == NULL ? sizeof(int32_t) : 1;
    const bool dot_cpu = emu_neon_dotprod();
    const int32_t step = dot_cpu ? EMU_U8_NR : 8; /* columns per tile */
    for (int32_t o = 0; o < cols; o += step) {
        const int32_t ncols = cols - o < step ? cols - o : step;
        const EmuGemmRq at = rq == NULL ? (EmuGemmRq){0} : emu_gemm_rq_at(*rq, o);
        /* the 8-column tile's weights: vectors 2 and 3 of a group for the panel's high half */
        const int8_t *w = packed + (size_t)(o / EMU_U8_NR) * panel + (o % EMU_U8_NR) * 4;
        for (int32_t p = 0; p < a->rows; p += TR) {
            const int32_t nr = a->rows - p < TR ? a->rows - p : TR;
            const RowsTile t = {a->ptr + (size_t)(p / MR) * a->nseg * MR + p % MR,
                                a->nseg,
                                a->seg,
                                nr,
                                w,
                                init + o,
                                rq == NULL ? NULL : &at,
                                (uint8_t *)out + (size_t)p * row_bytes + (size_t)o * col_bytes,
                                ldo,
                                ncols};
            if (dot_cpu)
                tile_dot(&t);
            else
                tile_pairs(&t);
        }
    }
}

bool emu_gemm_rows_ready(void) { return emu_isa() == EMU_ISA_NEON; }
#endif
