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

/* Rows [0, nr) of the 32 x 32 block `buf` (columns o..o+31) plus init, into out. */
EMU_AMX static void store_block(const int32_t *buf, int nr, const int32_t *init,
                                const EmuGemmRq *rq, int32_t o, int32_t cols, void *out,
                                int32_t ldo) {
    for (int q = 0; q < 2; q++) {
        const int32_t c = o + 16 * q;
        const __mmask16 m = cols_mask(c, cols);
        if (m == 0) break;
        const __m512i base = _mm512_loadu_si512(init + c);
        if (rq == NULL) {
            for (int r = 0; r < nr; r++)
                _mm512_mask_storeu_epi32(
                    (int32_t *)out + (size_t)r * ldo + c, m,
                    _mm512_add_epi32(_mm512_loadu_si512(buf + r * EMU_AMX_NR + 16 * q), base));
            continue;
        }
        const __m512i left = _mm512_loadu_si512(rq->left + c),
                      mult = _mm512_loadu_si512(rq->mult + c),
                      right = _mm512_loadu_si512(rq->right + c),
                      mask = _mm512_loadu_si512(rq->mask + c), z = _mm512_set1_epi32(rq->z),
                      lo = _mm512_set1_epi32(rq->lo - rq->z),
                      hi = _mm512_set1_epi32(rq->hi - rq->z);
        for (int r = 0; r < nr; r++) {
            const __m512i v =
                _mm512_add_epi32(_mm512_loadu_si512(buf + r * EMU_AMX_NR + 16 * q), base);
            _mm512_mask_cvtepi32_storeu_epi8(
                (int8_t *)out + (size_t)r * ldo + c, m,
                emu_narrow16(_mm512_sllv_epi32(v, left), mult, right, mask, z, lo, hi));
        }
    }
}

/* The sums of the 32 x 32 block at rows a (lda apart), panels b0 and b0 + panel, in tiles 0-3. */
EMU_AMX static inline void block_sums(const int8_t *a, int32_t lda, const int8_t *b0,
                                      size_t panel, int32_t kpad) {
    const int8_t *a1 = a + (size_t)16 * lda, *b1 = b0 + panel;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int32_t k = 0; k < kpad; k += EMU_AMX_KB) {
        _tile_loadd(4, a + k, lda);
        _tile_loadd(5, a1 + k, lda);
        _tile_loadd(6, b0 + (size_t)k * EMU_U8_NR, EMU_U8_NR * EMU_U8_KB);
        _tile_loadd(7, b1 + (size_t)k * EMU_U8_NR, EMU_U8_NR * EMU_U8_KB);
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

EMU_AMX static void gemm_amx(const int8_t *a, int32_t lda, int32_t rows, const int8_t *packed,
                             int32_t kpad, const int32_t *init, const EmuGemmRq *rq, void *out,
                             int32_t ldo, int32_t cols) {
    TileConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
    /* two buffers: block j's tile products are issued before block j - 1 is requantized, so
     * the tile unit works on the one while the vector lanes finish the other */
    int32_t buf[2][EMU_AMX_MR * EMU_AMX_NR] __attribute__((aligned(64)));
    const size_t panel = (size_t)kpad * EMU_U8_NR;
    const size_t row_bytes = (size_t)ldo * (rq == NULL ? sizeof(int32_t) : 1);
    int32_t last_o = -1, last_p = 0, cur = 0;
    for (int32_t o = 0; o < cols; o += EMU_AMX_NR) { /* the two panels stay in cache */
        const int8_t *b = packed + (size_t)(o / EMU_U8_NR) * panel;
        for (int32_t p = 0; p < rows; p += EMU_AMX_MR) {
            block_sums(a + (size_t)p * lda, lda, b, panel, kpad);
            if (last_o >= 0)
                store_block(buf[cur ^ 1], rows - last_p < EMU_AMX_MR ? rows - last_p : EMU_AMX_MR,
                            init, rq, last_o, cols, (uint8_t *)out + (size_t)last_p * row_bytes,
                            ldo);
            block_store(buf[cur]);
            last_o = o, last_p = p, cur ^= 1;
        }
    }
    if (last_o >= 0)
        store_block(buf[cur ^ 1], rows - last_p < EMU_AMX_MR ? rows - last_p : EMU_AMX_MR, init,
                    rq, last_o, cols, (uint8_t *)out + (size_t)last_p * row_bytes, ldo);
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

void emu_gemm_amx(const int8_t *a, int32_t lda, int32_t rows, const int8_t *packed, int32_t kpad,
                  const int32_t *init, const EmuGemmRq *rq, void *out, int32_t ldo,
                  int32_t cols) {
    gemm_amx(a, lda, rows, packed, kpad, init, rq, out, ldo, cols);
}
#else
static bool amx_cpu(void) { return false; }

void emu_gemm_amx(const int8_t *a, int32_t lda, int32_t rows, const int8_t *packed, int32_t kpad,
                  const int32_t *init, const EmuGemmRq *rq, void *out, int32_t ldo,
                  int32_t cols) {
    (void)a, (void)lda, (void)rows, (void)packed, (void)kpad, (void)init, (void)rq, (void)out;
    (void)ldo, (void)cols;
    abort(); /* unreachable: emu_gemm_amx_ready() is false here */
}
#endif

bool emu_gemm_amx_ready(void) {
    const char *v = getenv("MDLA_EMU_AMX");
    if (v != NULL && strcmp(v, "0") == 0) return false;
    return emu_gemm_rows_ready() && amx_cpu();
}
