/*
 * gemm.c: the 8-bit GEMM of gemm.h, chosen at run time: AVX-512 VNNI (vpdpbusd, uint8 x int8)
 * on x86-64 (cpuid), the dot-product extension (sdot, int8 x int8) on aarch64 (HWCAP_ASIMDDP).
 *
 * x86 register tile: EMU_U8_MR rows x 2 panels (32 columns) = 16 zmm accumulators; per group of
 * 4 k, two packed weight vectors are loaded and each row's 4 bytes are broadcast to all lanes;
 * a single trailing panel runs the same tile with one vector. aarch64: 4 rows x 1 panel (four
 * int32x4 vectors each) = 16 accumulators of the 32 registers. The accumulators start at init
 * (the zero-point correction), so the output is the finished sum (exactness: gemm.h); columns
 * at or past `cols` are never stored.
 */
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "simd.h"
#include "simd_neon.h"

void emu_gemm_u8_pack(const int8_t *w, int32_t co, int32_t depth, int32_t z, int32_t kpad,
                      int32_t cpad, int8_t *packed, int32_t *init) {
    memset(packed, 0, (size_t)cpad * kpad);
    for (int32_t o = 0; o < cpad; o++) {
        int64_t sum = 0;
        if (o < co) {
            const int8_t *src = w + (size_t)o * depth;
            /* panel o / NR, lane o % NR: byte k (k % 4 == 0) of the column at k * NR, so group
             * k / 4's 4 bytes are one copy and the last < 4 bytes run on from there */
            int8_t *dst = packed + (size_t)(o / EMU_U8_NR) * kpad * EMU_U8_NR +
                          (size_t)(o % EMU_U8_NR) * EMU_U8_KB;
            int32_t k = 0;
            for (; k + EMU_U8_KB <= depth; k += EMU_U8_KB)
                memcpy(dst + (size_t)k * EMU_U8_NR, src + k, EMU_U8_KB);
            if (k < depth) memcpy(dst + (size_t)k * EMU_U8_NR, src + k, (size_t)(depth - k));
            for (k = 0; k < depth; k++) sum += src[k];
        }
        /* |sum| <= 2^16 * 128 and |z + OFFSET| <= 255: the product fits int32 */
        init[o] = (int32_t)(-(int64_t)(z + EMU_U8_OFFSET) * sum);
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define EMU_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

/* One tile: MR rows of `a` x `np` (1 or 2) panels. */
EMU_VNNI static inline __attribute__((always_inline)) void
tile_u8(const uint8_t *a, const int8_t *w0, const int8_t *w1, const int32_t *init, int32_t *out,
        int32_t ldo, int32_t kpad, int np, __mmask16 m0, __mmask16 m1) {
    __m512i acc0[EMU_U8_MR], acc1[EMU_U8_MR];
    const __m512i i0 = _mm512_loadu_si512(init);
    const __m512i i1 = np == 2 ? _mm512_loadu_si512(init + EMU_U8_NR) : i0;
    for (int r = 0; r < EMU_U8_MR; r++) acc0[r] = i0, acc1[r] = i1;
    for (int32_t k = 0; k < kpad; k += EMU_U8_KB) {
        const __m512i b0 = _mm512_loadu_si512(w0 + (size_t)k * EMU_U8_NR);
        const __m512i b1 = np == 2 ? _mm512_loadu_si512(w1 + (size_t)k * EMU_U8_NR) : b0;
        for (int r = 0; r < EMU_U8_MR; r++) {
            int32_t q;
            memcpy(&q, a + (size_t)r * kpad + k, sizeof q);
            const __m512i x = _mm512_set1_epi32(q);
            acc0[r] = _mm512_dpbusd_epi32(acc0[r], x, b0);
            if (np == 2) acc1[r] = _mm512_dpbusd_epi32(acc1[r], x, b1);
        }
    }
    for (int r = 0; r < EMU_U8_MR; r++) {
        _mm512_mask_storeu_epi32(out + (size_t)r * ldo, m0, acc0[r]);
        if (np == 2) _mm512_mask_storeu_epi32(out + (size_t)r * ldo + EMU_U8_NR, m1, acc1[r]);
    }
}

/* The store mask of the panel starting at column o: its columns below `cols`. */
EMU_VNNI static inline __mmask16 panel_mask(int32_t o, int32_t cols) {
    const int32_t n = cols - o;
    return n >= EMU_U8_NR ? (__mmask16)0xFFFF : (__mmask16)((1u << (n > 0 ? n : 0)) - 1u);
}

EMU_VNNI void emu_gemm_u8(const uint8_t *a, const int8_t *packed, const int32_t *init,
                          int32_t *out, int32_t rows, int32_t cols, int32_t kpad) {
    const size_t panel = (size_t)kpad * EMU_U8_NR;
    const int32_t cpad = emu_round_up(cols, EMU_U8_NR);
    int32_t o = 0;
    for (; o + 2 * EMU_U8_NR <= cpad; o += 2 * EMU_U8_NR) {
        const int8_t *w0 = packed + (size_t)(o / EMU_U8_NR) * panel;
        const __mmask16 m0 = panel_mask(o, cols), m1 = panel_mask(o + EMU_U8_NR, cols);
        for (int32_t p = 0; p < rows; p += EMU_U8_MR)
            tile_u8(a + (size_t)p * kpad, w0, w0 + panel, init + o, out + (size_t)p * cols + o,
                    cols, kpad, 2, m0, m1);
    }
    if (o < cpad) {
        const int8_t *w0 = packed + (size_t)(o / EMU_U8_NR) * panel;
        const __mmask16 m0 = panel_mask(o, cols);
        for (int32_t p = 0; p < rows; p += EMU_U8_MR)
            tile_u8(a + (size_t)p * kpad, w0, w0, init + o, out + (size_t)p * cols + o, cols,
                    kpad, 1, m0, m0);
    }
}

static bool vnni_cpu;
__attribute__((constructor)) static void detect_vnni(void) {
    __builtin_cpu_init();
    vnni_cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

static bool u8_cpu(void) { return vnni_cpu; }
#elif defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>

#define DOT_MR 4

/* 4 rows x one panel of 16 columns; lane c of weight vector v is column 4v + c. */
EMU_DOTPROD static void tile_dot(const uint8_t *a, const int8_t *w, const int32_t *init,
                                 int32_t *out, int32_t ldo, int32_t kpad, int32_t ncols) {
    int32x4_t acc[DOT_MR][4];
    for (int v = 0; v < 4; v++) {
        const int32x4_t i = vld1q_s32(init + 4 * v);
        for (int r = 0; r < DOT_MR; r++) acc[r][v] = i;
    }
    for (int32_t k = 0; k < kpad; k += EMU_U8_KB) {
        const int8_t *g = w + (size_t)k * EMU_U8_NR;
        const int8x16_t b0 = vld1q_s8(g), b1 = vld1q_s8(g + 16), b2 = vld1q_s8(g + 32),
                        b3 = vld1q_s8(g + 48);
        for (int r = 0; r < DOT_MR; r++) {
            int32_t q;
            memcpy(&q, a + (size_t)r * kpad + k, sizeof q);
            const int8x16_t x = vreinterpretq_s8_s32(vdupq_n_s32(q));
            acc[r][0] = vdotq_s32(acc[r][0], x, b0);
            acc[r][1] = vdotq_s32(acc[r][1], x, b1);
            acc[r][2] = vdotq_s32(acc[r][2], x, b2);
            acc[r][3] = vdotq_s32(acc[r][3], x, b3);
        }
    }
    for (int r = 0; r < DOT_MR; r++) {
        int32_t tmp[EMU_U8_NR];
        for (int v = 0; v < 4; v++) vst1q_s32(tmp + 4 * v, acc[r][v]);
        memcpy(out + (size_t)r * ldo, tmp, (size_t)ncols * sizeof *tmp);
    }
}

static bool u8_cpu(void) { return emu_neon_dotprod(); }

void emu_gemm_u8(const uint8_t *a, const int8_t *packed, const int32_t *init, int32_t *out,
                 int32_t rows, int32_t cols, int32_t kpad) {
    const size_t panel = (size_t)kpad * EMU_U8_NR;
    for (int32_t o = 0; o < cols; o += EMU_U8_NR) {
        const int32_t n = cols - o < EMU_U8_NR ? cols - o : EMU_U8_NR;
        for (int32_t p = 0; p < rows; p += DOT_MR)
            tile_dot(a + (size_t)p * kpad, packed + (size_t)(o / EMU_U8_NR) * panel, init + o,
                     out + (size_t)p * cols + o, cols, kpad, n);
    }
}
#else
static bool u8_cpu(void) { return false; }

void emu_gemm_u8(const uint8_t *a, const int8_t *packed, const int32_t *init, int32_t *out,
                 int32_t rows, int32_t cols, int32_t kpad) {
    (void)a, (void)packed, (void)init, (void)out, (void)rows, (void)cols, (void)kpad;
    abort(); /* unreachable: emu_gemm_u8_ready() is false here */
}
#endif

bool emu_gemm_u8_ready(void) {
    /* emu_isa() is EMU_ISA_PORTABLE under MDLA_EMU_PORTABLE=1 or MDLA_EMU_ISA=portable, and
     * AVX2 under MDLA_EMU_ISA=avx2 (simd.h) */
#if defined(__x86_64__)
    if (emu_isa() != EMU_ISA_AVX512) return false;
#elif defined(__aarch64__)
    if (emu_isa() != EMU_ISA_NEON) return false;
#endif
    return u8_cpu();
}
