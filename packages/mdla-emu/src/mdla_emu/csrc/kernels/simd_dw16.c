/*
 * simd_dw16.c: the multiplier-1 16x8 DEPTHWISE_CONV_2D row of simd.h (emu_dw16_row), in
 * portable C and in AVX2 intrinsics; its exactness is beside its declaration in simd.h.
 */
#include <stdlib.h>

#include "simd.h"

/* Channels [k, c) of one pixel's sums, one channel at a time (the tails of the AVX2 row). */
static inline void dw16_channels(const EmuDw16Row *d, const int32_t *taps, int32_t n, int32_t k,
                                 int32_t *out) {
    for (; k < d->g.c; k++) {
        int32_t s = 0;
        for (int32_t t = 0; t < n; t++)
            s += (int32_t)d->image[taps[2 * t] + k] * d->filter[taps[2 * t + 1] + k];
        out[k] = s;
    }
}

void emu_dw16_row(const EmuDw16Row *d, int32_t oy, int32_t *acc, int32_t *taps) {
    for (int32_t ox = 0; ox < d->g.ow; ox++) {
        const int32_t n = emu_dw_taps(&d->g, oy, ox, taps);
        int32_t *out = acc + (size_t)ox * d->g.c;
        for (int32_t k = 0; k < d->g.c; k++) out[k] = 0;
        for (int32_t t = 0; t < n; t++) { /* tap-outer: the channel loop vectorizes */
            const int16_t *x = d->image + taps[2 * t], *w = d->filter + taps[2 * t + 1];
            for (int32_t k = 0; k < d->g.c; k++) out[k] += (int32_t)x[k] * w[k];
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define EMU_T_AVX2 __attribute__((target("avx2")))

/* 16 channels from k: taps t and t + 1 interleaved per channel (unpacklo: channels 0-3 and
 * 8-11, unpackhi: 4-7 and 12-15), one vpmaddwd each adds x_t w_t + x_t1 w_t1; an odd last tap
 * pairs with a zero. The lanes are put back in channel order once, at the store. */
EMU_T_AVX2 static inline void dw16_block16(const EmuDw16Row *d, const int32_t *taps, int32_t n,
                                           int32_t k, int32_t *out) {
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int32_t t = 0; t < n; t += 2) {
        const __m256i x0 = _mm256_loadu_si256((const void *)(d->image + taps[2 * t] + k));
        const __m256i w0 = _mm256_loadu_si256((const void *)(d->filter + taps[2 * t + 1] + k));
        __m256i x1 = _mm256_setzero_si256(), w1 = _mm256_setzero_si256();
        if (t + 1 < n) {
            x1 = _mm256_loadu_si256((const void *)(d->image + taps[2 * t + 2] + k));
            w1 = _mm256_loadu_si256((const void *)(d->filter + taps[2 * t + 3] + k));
        }
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1),
                                                    _mm256_unpacklo_epi16(w0, w1)));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1),
                                                    _mm256_unpackhi_epi16(w0, w1)));
    }
    _mm256_storeu_si256((void *)(out + k), _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256((void *)(out + k + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
}

/* 8 channels from k likewise in 128-bit lanes (unpacklo: channels 0-3, unpackhi: 4-7). */
EMU_T_AVX2 static inline void dw16_block8(const EmuDw16Row *d, const int32_t *taps, int32_t n,
                                          int32_t k, int32_t *out) {
    __m128i lo = _mm_setzero_si128(), hi = _mm_setzero_si128();
    for (int32_t t = 0; t < n; t += 2) {
        const __m128i x0 = _mm_loadu_si128((const void *)(d->image + taps[2 * t] + k));
        const __m128i w0 = _mm_loadu_si128((const void *)(d->filter + taps[2 * t + 1] + k));
        __m128i x1 = _mm_setzero_si128(), w1 = _mm_setzero_si128();
        if (t + 1 < n) {
            x1 = _mm_loadu_si128((const void *)(d->image + taps[2 * t + 2] + k));
            w1 = _mm_loadu_si128((const void *)(d->filter + taps[2 * t + 3] + k));
        }
        lo = _mm_add_epi32(lo, _mm_madd_epi16(_mm_unpacklo_epi16(x0, x1),
                                              _mm_unpacklo_epi16(w0, w1)));
        hi = _mm_add_epi32(hi, _mm_madd_epi16(_mm_unpackhi_epi16(x0, x1),
                                              _mm_unpackhi_epi16(w0, w1)));
    }
    _mm_storeu_si128((void *)(out + k), lo);
    _mm_storeu_si128((void *)(out + k + 4), hi);
}

EMU_T_AVX2 void emu_dw16_row_avx2(const EmuDw16Row *d, int32_t oy, int32_t *acc, int32_t *taps) {
    for (int32_t ox = 0; ox < d->g.ow; ox++) {
        const int32_t n = emu_dw_taps(&d->g, oy, ox, taps);
        int32_t *out = acc + (size_t)ox * d->g.c;
        int32_t k = 0;
        for (; k + 16 <= d->g.c; k += 16) dw16_block16(d, taps, n, k, out);
        for (; k + 8 <= d->g.c; k += 8) dw16_block8(d, taps, n, k, out);
        dw16_channels(d, taps, n, k, out);
    }
}
#else
void emu_dw16_row_avx2(const EmuDw16Row *d, int32_t oy, int32_t *acc, int32_t *taps) {
    (void)d, (void)oy, (void)acc, (void)taps;
    abort(); /* unreachable: emu_isa() is EMU_ISA_PORTABLE here */
}
#endif
