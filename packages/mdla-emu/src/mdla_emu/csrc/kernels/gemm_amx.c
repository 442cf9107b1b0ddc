/*
 * gemm_amx.c: emu_gemm_amx (gemm_amx.h). Tiles 0-3 accumulate the 2 x 2 block of 16 x 16 int32
 * sums, tiles 4-5 hold 16 rows x 64 codes each, tiles 6-7 the two panels' 16 groups x 16 x 4
 * weight bytes; every tile is configured 16 rows x 64 bytes (palette 1). The configuration is
 * loaded at the start of each call and released at its end, so a call is self-contained on
 * whichever pool thread runs it.
 */
#define _DEFAULT_SOURCE /* syscall(2) under -std=c11 */
#include "gemm_amx.h"

#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "kernels.h"

void emu_gemm_amx_pack(const int8_t *w, int32_t co, int32_t depth, int32_t z, int32_t kpad,
                       int32_t cpad, int8_t *packed, int32_t *init) {
    /* its init is -((z - OFFSET) + OFFSET) * sum_k w[o][k] = -z * sum_k w[o][k] */
    emu_gemm_u8_pack(w, co, depth, z - EMU_U8_OFFSET, kpad, cpad, packed, init);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "simd_x86.h"

#define EMU_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl")))
#define ARCH_REQ_XCOMP_PERM 0x1023 /* Linux arch/x86 uapi prctl.h */
#define XFEATURE_XTILEDATA 18

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((aligned(64))) TileConfig;

/* The store mask of the 16 columns from o: those below `cols`. */
static inline __mmask16 cols_mask(int32_t o, int32_t cols) {
    const int32_t n = cols - o;
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n > 0 ? n : 0)) - 1u);
}

/* The 32 x 32 block `buf` (columns o..o+31) plus init into the int32 rows rowp[r] (NULL:
 * dropped). */
EMU_AMX static void store_sums(const int32_t *buf, void *const *rowp, const int32_t *init,
                               int32_t o, int32_t cols) {
    for (int q = 0; q < 2; q++) {
        const int32_t c = o + 16 * q;
        const __mmask16 m = cols_mask(c, cols);
        if (m == 0) break;
        const __m512i base = _mm512_loadu_si512(init + c);
        for (int r = 0; r < EMU_AMX_MR; r++)
            if (rowp[r] != NULL)
                _mm512_mask_storeu_epi32(
                    (int32_t *)rowp[r] + c, m,
                    _mm512_add_epi32(_mm512_loadu_si512(buf + r * EMU_AMX_NR + 16 * q), base));
    }
}

/* 16 columns' narrow requantization before its clamp, in simd.h's int64 form (emu_dw4_row's
 * proof there; emu_rq16 of simd_x86.h): v = (sums + init) << left, t = RDBPOT(SRDHM(v, m), r)
 * exactly. The constants are built per block from the column arrays (once per 32 rows). */
typedef struct {
    __m512i base, left, mult, mult_o;
    EmuRqHalf e, o; /* the even and the odd columns' */
} Half;

/* One half's round constant, shift and r >= 1 lanes from its r in int64 lanes (emu_rq_round
 * of simd.h in vector lanes). */
EMU_AMX static inline EmuRqHalf half_round(__m512i r) {
    const __m512i b30 = _mm512_set1_epi64(INT64_C(1) << 30);
    EmuRqHalf h;
    h.pos = _mm512_cmpgt_epi64_mask(r, _mm512_setzero_si512());
    h.round = _mm512_add_epi64(b30, _mm512_maskz_sllv_epi64(h.pos, b30, r));
    h.shift = _mm512_add_epi64(r, _mm512_set1_epi64(31));
    return h;
}

EMU_AMX static inline Half half_at(const int32_t *init, const EmuGemmRq *rq, int32_t c) {
    Half k;
    const __m512i right = _mm512_loadu_si512(rq->right + c);
    k.base = _mm512_loadu_si512(init + c);
    k.left = _mm512_loadu_si512(rq->left + c);
    k.mult = _mm512_loadu_si512(rq->mult + c);
    k.mult_o = _mm512_srli_epi64(k.mult, 32);
    k.e = half_round(_mm512_srli_epi64(_mm512_slli_epi64(right, 32), 32));
    k.o = half_round(_mm512_srli_epi64(right, 32));
    return k;
}

/* t of the 16 sums at `sums` (int32 lanes); `shifted`: some column of the block has left > 0
 * (else the shift is skipped). */
EMU_AMX static inline __attribute__((always_inline)) __m512i half_t(const int32_t *sums,
                                                                    const Half *k,
                                                                    bool shifted) {
    __m512i v = _mm512_add_epi32(_mm512_loadu_si512(sums), k->base);
    if (shifted) v = _mm512_sllv_epi32(v, k->left);
    return emu_rq16(v, k->mult, k->mult_o, k->e, k->o, _mm512_set1_epi64(INT64_C(1) << 31));
}

/* Rows r, r + 1 of the 32 x 32 block `buf` requantized, zero point added and clamped: 64 codes
 * in column order (row r's 32, then row r + 1's). */
EMU_AMX static inline __attribute__((always_inline)) __m512i
codes_of(const int32_t *s, const Half *k0, const Half *k1, __m512i z, bool two, bool shifted) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i a = _mm512_adds_epi16(
        _mm512_packs_epi32(half_t(s, k0, shifted), two ? half_t(s + 16, k1, shifted) : zero), z);
    const __m512i b = _mm512_adds_epi16(
        _mm512_packs_epi32(half_t(s + EMU_AMX_NR, k0, shifted),
                           two ? half_t(s + EMU_AMX_NR + 16, k1, shifted) : zero),
        z);
    return _mm512_packs_epi16(a, b);
}

/* The 32 x 32 block `buf` (columns o..o+31) requantized into the int8 rows rowp[r] (NULL:
 * dropped), two rows (64 codes) per vector: packs_epi32 saturates each t to int16, adds_epi16
 * adds z with saturation, packs_epi16 saturates to int8, and the clamp to [lo, hi] follows in
 * bytes. Each step only clamps a value already outside [-128, 127] (|z| <= 128) further out,
 * so the result is clamp(t + z, lo, hi), the narrow requantization's. The packs interleave per
 * 128-bit lane (4 codes of t0, of t1, of t2, of t3), whose dwords one permutation puts in
 * column order. */
EMU_AMX static inline __attribute__((always_inline)) void
store_rows(const int32_t *buf, void *const *rowp, const Half *k0, const Half *k1,
           const EmuGemmRq *rq, int32_t o, int32_t n, bool shifted) {
    const __mmask32 m = n >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << n) - 1u);
    const __m512i z = _mm512_set1_epi16((int16_t)rq->z), lo = _mm512_set1_epi8((int8_t)rq->lo),
                  hi = _mm512_set1_epi8((int8_t)rq->hi),
                  order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const bool two = n > 16; /* else the block's second 16 columns are all padding */
    for (int r = 0; r < EMU_AMX_MR; r += 2) {
        if (rowp[r] == NULL && rowp[r + 1] == NULL) continue;
        const __m512i q = codes_of(buf + r * EMU_AMX_NR, k0, k1, z, two, shifted);
        const __m512i c =
            _mm512_min_epi8(_mm512_max_epi8(_mm512_permutexvar_epi32(order, q), lo), hi);
        if (rowp[r] != NULL)
            _mm256_mask_storeu_epi8((int8_t *)rowp[r] + o, m, _mm512_castsi512_si256(c));
        if (rowp[r + 1] != NULL)
            _mm256_mask_storeu_epi8((int8_t *)rowp[r + 1] + o, m,
                                    _mm512_extracti64x4_epi64(c, 1));
    }
}

EMU_AMX static void store_codes(const int32_t *buf, void *const *rowp, const int32_t *init,
                                const EmuGemmRq *rq, int32_t o, int32_t cols) {
    const Half k0 = half_at(init, rq, o), k1 = half_at(init, rq, o + 16);
    const __m512i l0 = _mm512_loadu_si512(rq->left + o), l1 = _mm512_loadu_si512(rq->left + o + 16);
    if (_mm512_test_epi32_mask(l0, l0) != 0 || _mm512_test_epi32_mask(l1, l1) != 0)
        store_rows(buf, rowp, &k0, &k1, rq, o, cols - o, true);
    else
        store_rows(buf, rowp, &k0, &k1, rq, o, cols - o, false);
}

/* The sums of the 32 x 32 block of row tiles a0, a1 (rows lda apart; chunk c at koff[c], or
 * 64 c without koff), panels b0 and b0 + panel, in tiles 0-3. */
EMU_AMX static inline void block_sums(const int8_t *a0, const int8_t *a1, int32_t lda,
                                      const int32_t *koff, int32_t nk, const int8_t *b0,
                                      size_t panel) {
    const int8_t *b1 = b0 + panel;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int32_t c = 0; c < nk; c++) {
        const size_t k = koff != NULL ? (size_t)koff[c] : (size_t)c * EMU_AMX_KB;
        const size_t kb = (size_t)c * EMU_AMX_KB * EMU_U8_NR;
        _tile_loadd(4, a0 + k, lda);
        _tile_loadd(5, a1 + k, lda);
        _tile_loadd(6, b0 + kb, EMU_U8_NR * EMU_U8_KB);
        _tile_loadd(7, b1 + kb, EMU_U8_NR * EMU_U8_KB);
        _tile_dpbssd(0, 4, 6);
        _tile_dpbssd(1, 4, 7);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
    }
}

/* Tiles 0-3 into the 32 x 32 block buf. */
EMU_AMX static inline void block_store(int32_t *buf) {
    const int stride = EMU_AMX_NR * (int)sizeof(int32_t);
    _tile_stored(0, buf, stride);
    _tile_stored(1, buf + 16, stride);
    _tile_stored(2, buf + 16 * EMU_AMX_NR, stride);
    _tile_stored(3, buf + 16 * EMU_AMX_NR + 16, stride);
}

EMU_AMX static inline void store_block(const int32_t *buf, void *const *rowp,
                                       const int32_t *init, const EmuGemmRq *rq, int32_t o,
                                       int32_t cols) {
    if (rq == NULL)
        store_sums(buf, rowp, init, o, cols);
    else
        store_codes(buf, rowp, init, rq, o, cols);
}

EMU_AMX static void gemm_gather(const EmuAmxRows *a, const int8_t *packed, const int32_t *init,
                                const EmuGemmRq *rq, int32_t cols) {
    TileConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
    /* two buffers: block j's tile products are issued before block j - 1 is requantized, so
     * the tile unit works on the one while the vector lanes finish the other */
    int32_t buf[2][EMU_AMX_MR * EMU_AMX_NR] __attribute__((aligned(64)));
    const size_t panel = (size_t)a->nk * EMU_AMX_KB * EMU_U8_NR;
    int32_t last_o = -1, last_j = 0, cur = 0;
    for (int32_t o = 0; o < cols; o += EMU_AMX_NR) { /* the two panels stay in cache */
        const int8_t *b = packed + (size_t)(o / EMU_U8_NR) * panel;
        for (int32_t j = 0; j < a->nblocks; j++) {
            block_sums(a->tiles[2 * j], a->tiles[2 * j + 1], a->lda, a->koff, a->nk, b, panel);
            if (last_o >= 0)
                store_block(buf[cur ^ 1], a->rowp + (size_t)last_j * EMU_AMX_MR, init, rq,
                            last_o, cols);
            block_store(buf[cur]);
            last_o = o, last_j = j, cur ^= 1;
        }
    }
    if (last_o >= 0)
        store_block(buf[cur ^ 1], a->rowp + (size_t)last_j * EMU_AMX_MR, init, rq, last_o, cols);
    _tile_release();
}

static bool amx_ok;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

/* cpuid leaf 7: EDX bit 24 AMX-TILE, bit 25 AMX-INT8; then the kernel's permission. */
static void detect_amx(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    if ((d & (1u << 24)) == 0 || (d & (1u << 25)) == 0) return;
    amx_ok = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

static bool amx_cpu(void) {
    pthread_once(&amx_once, detect_amx);
    return amx_ok;
}

void emu_gemm_amx_gather(const EmuAmxRows *a, const int8_t *packed, const int32_t *init,
                         const EmuGemmRq *rq, int32_t cols) {
    gemm_gather(a, packed, init, rq, cols);
}
#else
static bool amx_cpu(void) { return false; }

void emu_gemm_amx_gather(const EmuAmxRows *a, const int8_t *packed, const int32_t *init,
                         const EmuGemmRq *rq, int32_t cols) {
    (void)a, (void)packed, (void)init, (void)rq, (void)cols;
    abort(); /* unreachable: emu_gemm_amx_ready() is false here */
}
#endif

bool emu_gemm_amx_ready(void) {
    const char *v = getenv("MDLA_EMU_AMX");
    if (v != NULL && strcmp(v, "0") == 0) return false;
    return emu_gemm_rows_ready() && amx_cpu();
}

/* Up to 8 blocks (256 rows) per gather: the row tiles a + 16 t lda, the rows past `rows`
 * dropped. */
void emu_gemm_amx(const int8_t *a, int32_t lda, int32_t rows, const int8_t *packed, int32_t kpad,
                  const int32_t *init, const EmuGemmRq *rq, void *out, int32_t ldo,
                  int32_t cols) {
    enum { BLOCKS = 8 };
    const int8_t *tiles[2 * BLOCKS];
    void *rowp[BLOCKS * EMU_AMX_MR];
    const size_t row_bytes = (size_t)ldo * (rq == NULL ? sizeof(int32_t) : 1);
    for (int32_t p0 = 0; p0 < rows; p0 += BLOCKS * EMU_AMX_MR) {
        const int32_t left = rows - p0;
        const int32_t nb =
            left >= BLOCKS * EMU_AMX_MR ? BLOCKS : (left + EMU_AMX_MR - 1) / EMU_AMX_MR;
        for (int32_t t = 0; t < 2 * nb; t++) tiles[t] = a + (size_t)(p0 + 16 * t) * lda;
        for (int32_t r = 0; r < nb * EMU_AMX_MR; r++)
            rowp[r] = r < left ? (uint8_t *)out + (size_t)(p0 + r) * row_bytes : NULL;
        const EmuAmxRows g = {tiles, nb, lda, NULL, kpad / EMU_AMX_KB, rowp};
        emu_gemm_amx_gather(&g, packed, init, rq, cols);
    }
}
