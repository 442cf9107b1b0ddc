/*
 * gemm_rows.c: emu_gemm_rows (gemm_rows.h) in AVX-512 VNNI. Register tile: EMU_U8_MR rows x 2
 * panels (32 columns) = 16 zmm accumulators, as gemm.c's; per segment the tile's 8 row
 * pointers are read once, then per group of 4 bytes two weight vectors are loaded and each
 * row's 4 bytes broadcast. The finished tile is requantized (or stored as int32) per panel
 * with that panel's constants loaded once for all its rows; columns at or past `cols` and rows
 * at or past `rows` are never stored.
 */
#include "gemm_rows.h"

#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "kernels.h"
#include "simd.h"

void emu_gemm_rows_pack(const int8_t *w, int32_t co, int32_t depth, int32_t z, int32_t kpad,
                        int32_t cpad, int8_t *packed, int32_t *init) {
    /* its init is -((z - OFFSET) + OFFSET) * sum_k w[o][k] = -z * sum_k w[o][k] */
    emu_gemm_u8_pack(w, co, depth, z - EMU_U8_OFFSET, kpad, cpad, packed, init);
#if EMU_U8_OFFSET != 0 /* aarch64 (gemm_rows_neon.c): sdot's weights stay w */
    for (size_t i = 0; i < (size_t)cpad * kpad; i++) packed[i] = (int8_t)(packed[i] ^ 0x80);
#endif
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "simd_x86.h"

#define EMU_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define MR EMU_U8_MR

/* The sums of one tile: `np` (1 or 2) panels of weights from w0 (w1 the second). */
EMU_VNNI static inline __attribute__((always_inline)) void
tile_sums(const uint8_t *const *ptr, int32_t nseg, int32_t seg, const int8_t *w0,
          const int8_t *w1, int np, __m512i *acc0, __m512i *acc1) {
    for (int32_t s = 0; s < nseg; s++) {
        const uint8_t *row[MR];
        for (int r = 0; r < MR; r++) row[r] = ptr[(size_t)s * MR + r];
        for (int32_t k = 0; k < seg; k += EMU_U8_KB) {
            const __m512i b0 = _mm512_loadu_si512(w0);
            const __m512i b1 = np == 2 ? _mm512_loadu_si512(w1) : b0;
            w0 += EMU_U8_KB * EMU_U8_NR;
            w1 += EMU_U8_KB * EMU_U8_NR;
            for (int r = 0; r < MR; r++) {
                int32_t q;
                memcpy(&q, row[r] + k, sizeof q);
                const __m512i x = _mm512_set1_epi32(q); /* int8 x 4: the signed operand */
                acc0[r] = _mm512_dpbusd_epi32(acc0[r], b0, x);
                if (np == 2) acc1[r] = _mm512_dpbusd_epi32(acc1[r], b1, x);
            }
        }
    }
}

/* Rows [0, nr) of one panel's accumulators (columns o.., store mask m) into out. */
EMU_VNNI static inline __attribute__((always_inline)) void
store_panel(const __m512i *acc, int nr, const EmuGemmRq *rq, int32_t o, __mmask16 m, void *out,
            int32_t ldo) {
    if (rq == NULL) {
        for (int r = 0; r < nr; r++)
            _mm512_mask_storeu_epi32((int32_t *)out + (size_t)r * ldo + o, m, acc[r]);
        return;
    }
    const __m512i left = _mm512_loadu_si512(rq->left + o),
                  mult = _mm512_loadu_si512(rq->mult + o),
                  right = _mm512_loadu_si512(rq->right + o),
                  mask = _mm512_loadu_si512(rq->mask + o), z = _mm512_set1_epi32(rq->z),
                  lo = _mm512_set1_epi32(rq->lo - rq->z), hi = _mm512_set1_epi32(rq->hi - rq->z);
    for (int r = 0; r < nr; r++)
        _mm512_mask_cvtepi32_storeu_epi8((int8_t *)out + (size_t)r * ldo + o, m,
                                         emu_narrow16(_mm512_sllv_epi32(acc[r], left), mult,
                                                      right, mask, z, lo, hi));
}

/* The store mask of the panel starting at column o: its columns below `cols`. */
static inline __mmask16 cols_mask(int32_t o, int32_t cols) {
    const int32_t n = cols - o;
    return n >= EMU_U8_NR ? (__mmask16)0xFFFF : (__mmask16)((1u << (n > 0 ? n : 0)) - 1u);
}

/* One tile: block `ptr` (nr rows stored) x np panels from column o. */
EMU_VNNI static inline __attribute__((always_inline)) void
tile(const EmuGemmRows *a, const uint8_t *const *ptr, const int32_t *corr, int nr,
     const int8_t *w0, size_t panel, const int32_t *init, const EmuGemmRq *rq, void *out,
     int32_t ldo, int32_t o, int32_t cols, int np) {
    __m512i acc0[MR], acc1[MR];
    const __m512i i0 = _mm512_loadu_si512(init + o);
    const __m512i i1 = np == 2 ? _mm512_loadu_si512(init + o + EMU_U8_NR) : i0;
    for (int r = 0; r < MR; r++) acc0[r] = i0, acc1[r] = i1;
    tile_sums(ptr, a->nseg, a->seg, w0, w0 + panel, np, acc0, acc1);
    for (int r = 0; r < MR; r++) {
        const __m512i c = _mm512_set1_epi32(corr[r]);
        acc0[r] = _mm512_add_epi32(acc0[r], c);
        if (np == 2) acc1[r] = _mm512_add_epi32(acc1[r], c);
    }
    store_panel(acc0, nr, rq, o, cols_mask(o, cols), out, ldo);
    if (np == 2)
        store_panel(acc1, nr, rq, o + EMU_U8_NR, cols_mask(o + EMU_U8_NR, cols), out, ldo);
}

/* corr[r] = -128 * (the sum of row r's int8 codes) for the `rows` rows of blocks from ptr:
 * vpsadbw adds 8 bytes x ^ 0x80 = x + 128 into each int64 lane, so minus 128 per byte. */
EMU_VNNI static void row_corrections(const EmuGemmRows *a, const uint8_t *const *ptr,
                                     int32_t rows, int32_t *corr) {
    const __m512i flip = _mm512_set1_epi8(-128), zero = _mm512_setzero_si512();
    const int64_t bias = (int64_t)128 * a->nseg * a->seg;
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t *const *seg = ptr + (size_t)(r / MR) * a->nseg * MR + r % MR;
        __m512i sum = zero;
        for (int32_t g = 0; g < a->nseg; g++) {
            const uint8_t *x = seg[(size_t)g * MR];
            for (int32_t c = 0; c < a->seg; c += 64) {
                const int32_t n = a->seg - c;
                const __mmask64 m = n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
                /* masked-off bytes are 0 ^ 0 = 0: they add nothing */
                const __m512i v = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, x + c),
                                                   _mm512_maskz_mov_epi8(m, flip));
                sum = _mm512_add_epi64(sum, _mm512_sad_epu8(v, zero));
            }
        }
        corr[r] = (int32_t)(-128 * (_mm512_reduce_add_epi64(sum) - bias)); /* |.| < 2^31 */
    }
}

/* Rows [0, a->rows) in chunks of CHUNK rows: their corrections, then every panel pair over
 * the chunk's blocks (the panel's weights stay in cache over the chunk). */
#define CHUNK 256
EMU_VNNI static void gemm_rows_vnni(const EmuGemmRows *a, const int8_t *packed,
                                    const int32_t *init, const EmuGemmRq *rq, void *out,
                                    int32_t ldo, int32_t cols) {
    const size_t panel = (size_t)a->nseg * a->seg * EMU_U8_NR;
    const size_t row_bytes = (size_t)ldo * (rq == NULL ? sizeof(int32_t) : 1);
    const int32_t cpad = emu_round_up(cols, EMU_U8_NR);
    int32_t corr[CHUNK];
    for (int32_t p0 = 0; p0 < a->rows; p0 += CHUNK) {
        const int32_t rows = a->rows - p0 < CHUNK ? a->rows - p0 : CHUNK;
        const uint8_t *const *base = a->ptr + (size_t)(p0 / MR) * a->nseg * MR;
        row_corrections(a, base, rows, corr);
        for (int32_t o = 0; o < cpad; o += 2 * EMU_U8_NR) {
            const int8_t *w0 = packed + (size_t)(o / EMU_U8_NR) * panel;
            for (int32_t b = 0; b * MR < rows; b++) {
                const int nr = rows - b * MR < MR ? rows - b * MR : MR;
                const uint8_t *const *ptr = base + (size_t)b * a->nseg * MR;
                void *dst = (uint8_t *)out + (size_t)(p0 + b * MR) * row_bytes;
                if (o + 2 * EMU_U8_NR <= cpad)
                    tile(a, ptr, corr + b * MR, nr, w0, panel, init, rq, dst, ldo, o, cols, 2);
                else
                    tile(a, ptr, corr + b * MR, nr, w0, panel, init, rq, dst, ldo, o, cols, 1);
            }
        }
    }
}

static bool vnni_cpu;
__attribute__((constructor)) static void detect_rows_vnni(void) {
    __builtin_cpu_init();
    vnni_cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

void emu_gemm_rows(const EmuGemmRows *a, const int8_t *packed, const int32_t *init,
                   const EmuGemmRq *rq, void *out, int32_t ldo, int32_t cols) {
    gemm_rows_vnni(a, packed, init, rq, out, ldo, cols);
}

#elif !EMU_ROWS_NEON
static const bool vnni_cpu = false;

void emu_gemm_rows(const EmuGemmRows *a, const int8_t *packed, const int32_t *init,
                   const EmuGemmRq *rq, void *out, int32_t ldo, int32_t cols) {
    (void)a, (void)packed, (void)init, (void)rq, (void)out, (void)ldo, (void)cols;
    abort(); /* unreachable: emu_gemm_rows_ready() is false here */
}
#endif

#if !EMU_ROWS_NEON
bool emu_gemm_rows_ready(void) { return vnni_cpu && emu_gemm_u8_ready(); }
#endif
