/*
 * simd_dw.c: the multiplier-1 DEPTHWISE_CONV_2D rows of simd.h (emu_dw2_row_avx2, emu_dw_row_*)
 * in AVX2 and AVX-512 intrinsics; their exactness is beside their declarations in simd.h, the narrow
 * requantization's in simd.c's header.
 */
#include <stdlib.h>

#include "simd.h"

/* The taps of output pixel (oy, ox) inside the image: pairs (input offset, filter offset) in
 * `taps`, their count returned (simd.h). */
int32_t emu_dw_taps(const EmuDwGeom *g, int32_t oy, int32_t ox, int32_t *taps) {
    int32_t n = 0;
    for (int32_t i = 0; i < g->kh; i++) {
        const int32_t iy = oy * g->stride_h + i * g->dil_h - g->pad_top;
        if (iy < 0 || iy >= g->h) continue;
        for (int32_t j = 0; j < g->kw; j++) {
            const int32_t ix = ox * g->stride_w + j * g->dil_w - g->pad_left;
            if (ix < 0 || ix >= g->w) continue;
            taps[2 * n] = (iy * g->w + ix) * g->c;
            taps[2 * n + 1] = (i * g->kw + j) * g->c;
            n++;
        }
    }
    return n;
}

void emu_dw_columns(const EmuDwGeom *g, int32_t *lo, int32_t *hi) {
    *lo = (g->pad_left + g->stride_w - 1) / g->stride_w; /* ox * stride_w >= pad_left */
    /* ox * stride_w - pad_left + (kw - 1) * dil_w <= w - 1 */
    const int32_t room = g->w - 1 + g->pad_left - (g->kw - 1) * g->dil_w;
    *hi = room < 0 ? 0 : room / g->stride_w + 1;
    if (*hi > g->ow) *hi = g->ow;
    if (*hi < *lo) *hi = *lo;
}

void emu_dw2_pack(const int8_t *w, int32_t taps, int32_t c, int16_t *pairs) {
    for (int32_t p = 0; p < (taps + 1) / 2; p++)
        for (int32_t k = 0; k < c; k++)
            for (int32_t j = 0; j < 2; j++) {
                const int32_t t = 2 * p + j;
                pairs[((size_t)p * c + k) * 2 + j] = t < taps ? w[(size_t)t * c + k] : 0;
            }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "simd_x86.h"

#define EMU_T_AVX2 __attribute__((target("avx2")))

/* Output pixel (oy, ox)'s tap rows in `rows` (simd.h EmuDw2Row): the input pixel each tap reads,
 * or the zero-point row for a tap outside the image and for the pad tap past kh * kw. */
static void dw2_rows(const EmuDw2Row *d, int32_t oy, int32_t ox, const int8_t **rows) {
    const EmuDwGeom *g = &d->g;
    int32_t t = 0;
    for (int32_t i = 0; i < g->kh; i++) {
        const int32_t iy = oy * g->stride_h + i * g->dil_h - g->pad_top;
        for (int32_t j = 0; j < g->kw; j++, t++) {
            const int32_t ix = ox * g->stride_w + j * g->dil_w - g->pad_left;
            const bool inside = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w;
            rows[t] = inside ? d->image + ((size_t)iy * g->w + ix) * g->c : d->zrow;
        }
    }
    if (t % 2) rows[t] = d->zrow;
}

/* Channels [k, k + 8 * nb) of one pixel (nb 2 or 4: 16 or 32 channels, whole blocks of 16
 * bytes per row) or, for nb 1, the 8 from k (8-byte loads): per pair of taps the two rows'
 * bytes interleaved (unpack), widened to int16 pairs and one vpmaddwd against the pair's
 * weights per 8 channels. */
EMU_T_AVX2 static inline __attribute__((always_inline)) void
dw2_block(const EmuDw2Row *d, const int8_t *const *rows, int32_t pairs, int32_t k, int nb,
          int32_t *out) {
    const int32_t c = d->g.c;
    __m256i s[4];
    for (int b = 0; b < nb; b++)
        s[b] = _mm256_loadu_si256((const __m256i *)(const void *)(d->zw + k + 8 * b));
    for (int32_t p = 0; p < pairs; p++) {
        const int8_t *r0 = rows[2 * p] + k, *r1 = rows[2 * p + 1] + k;
        const int16_t *w = d->pairs + ((size_t)p * c + k) * 2;
        for (int h = 0; h < nb; h += 2) { /* 16 channels: two 8-channel sums */
            __m128i lo, hi;
            if (nb == 1) {
                lo = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)r0),
                                       _mm_loadl_epi64((const __m128i *)(const void *)r1));
                hi = lo;
            } else {
                const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(r0 + 8 * h));
                const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(r1 + 8 * h));
                lo = _mm_unpacklo_epi8(a, b);
                hi = _mm_unpackhi_epi8(a, b);
            }
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(w + 16 * h));
            s[h] = _mm256_add_epi32(s[h], _mm256_madd_epi16(_mm256_cvtepi8_epi16(lo), w0));
            if (nb == 1) break;
            const __m256i w1 =
                _mm256_loadu_si256((const __m256i *)(const void *)(w + 16 * h + 16));
            s[h + 1] = _mm256_add_epi32(s[h + 1], _mm256_madd_epi16(_mm256_cvtepi8_epi16(hi), w1));
        }
    }
    for (int b = 0; b < nb; b++) _mm256_storeu_si256((__m256i *)(void *)(out + k + 8 * b), s[b]);
}

EMU_T_AVX2 void emu_dw2_row_avx2(const EmuDw2Row *d, int32_t oy, int32_t *acc,
                                 const int8_t **rows) {
    const int32_t c = d->g.c, taps = d->g.kh * d->g.kw, pairs = (taps + 1) / 2;
    for (int32_t ox = 0; ox < d->g.ow; ox++) {
        dw2_rows(d, oy, ox, rows);
        int32_t *out = acc + (size_t)ox * c;
        int32_t k = 0;
        for (; k + 32 <= c; k += 32) dw2_block(d, rows, pairs, k, 4, out);
        for (; k + 16 <= c; k += 16) dw2_block(d, rows, pairs, k, 2, out);
        for (; k + 8 <= c; k += 8) dw2_block(d, rows, pairs, k, 1, out);
        for (; k < c; k++) { /* the same integers, one channel at a time */
            int32_t v = d->zw[k];
            for (int32_t t = 0; t < 2 * pairs; t++)
                v += rows[t][k] * d->pairs[((size_t)(t / 2) * c + k) * 2 + t % 2];
            out[k] = v;
        }
    }
}

/* `nb` blocks of 16 channels from channel k of one pixel, every tap in registers; stored as
 * int32 sums to acc, or requantized (rq) to int8 at out. `fold`: every tap of the window lies
 * inside the image, so the sums start at d->zw (-z * sum_t w[t][c]) and add x * w per tap:
 * sum_t x w - z sum_t w = sum_t (x - z) w, the same integers (simd.h). */
EMU_T_AVX512 static inline __attribute__((always_inline)) void
dw_blocks16(const EmuDwRow *d, const int32_t *taps, int32_t n, int32_t k, int nb, __mmask16 m,
            bool fold, int32_t *acc, const EmuDwRq *rq, int8_t *out) {
    const __m512i z = _mm512_set1_epi32(fold ? 0 : d->z);
    __m512i s[4];
    for (int b = 0; b < nb; b++)
        s[b] = fold ? _mm512_maskz_loadu_epi32(m, d->zw + k + 16 * b) : _mm512_setzero_si512();
    for (int32_t t = 0; t < n; t++) {
        const int8_t *x = d->image + taps[2 * t] + k;
        const int32_t *w = d->filter + taps[2 * t + 1] + k;
        for (int b = 0; b < nb; b++) {
            const __m128i x8 = m == (__mmask16)0xFFFF
                                   ? _mm_loadu_si128((const __m128i *)(const void *)(x + 16 * b))
                                   : _mm_maskz_loadu_epi8(m, x + 16 * b);
            __m512i xv = _mm512_cvtepi8_epi32(x8);
            if (!fold) xv = _mm512_sub_epi32(xv, z);
            const __m512i wv = _mm512_maskz_loadu_epi32(m, w + 16 * b);
            s[b] = _mm512_add_epi32(s[b], _mm512_madd_epi16(xv, wv));
        }
    }
    if (rq == NULL) {
        for (int b = 0; b < nb; b++) _mm512_mask_storeu_epi32(acc + k + 16 * b, m, s[b]);
        return;
    }
    const __m512i vz = _mm512_set1_epi32(rq->z), lo = _mm512_set1_epi32(rq->lo - rq->z),
                  hi = _mm512_set1_epi32(rq->hi - rq->z);
    for (int b = 0; b < nb; b++) {
        const int32_t c = k + 16 * b;
        const __m512i v = _mm512_sllv_epi32(
            _mm512_add_epi32(s[b], _mm512_maskz_loadu_epi32(m, rq->bias + c)),
            _mm512_maskz_loadu_epi32(m, rq->left + c));
        const __m512i q = emu_narrow16(v, _mm512_maskz_loadu_epi32(m, rq->mult + c),
                                       _mm512_maskz_loadu_epi32(m, rq->right + c),
                                       _mm512_maskz_loadu_epi32(m, rq->mask + c), vz, lo, hi);
        _mm512_mask_cvtepi32_storeu_epi8(out + c, m, q);
    }
}

/* Every channel of one output pixel, in blocks of 64, 32, then 16 (the last one masked). */
EMU_T_AVX512 static inline __attribute__((always_inline)) void
dw_pixel16(const EmuDwRow *d, const int32_t *taps, int32_t n, bool fold, int32_t *a,
           const EmuDwRq *rq, int8_t *o) {
    const int32_t c = d->g.c;
    const __mmask16 all = (__mmask16)0xFFFF;
    int32_t k = 0;
    for (; k + 64 <= c; k += 64) dw_blocks16(d, taps, n, k, 4, all, fold, a, rq, o);
    for (; k + 32 <= c; k += 32) dw_blocks16(d, taps, n, k, 2, all, fold, a, rq, o);
    for (; k + 16 <= c; k += 16) dw_blocks16(d, taps, n, k, 1, all, fold, a, rq, o);
    if (k < c) dw_blocks16(d, taps, n, k, 1, (__mmask16)((1u << (c - k)) - 1u), fold, a, rq, o);
}

/* emu_dw_row_avx512 with the output either int32 sums (rq NULL) or requantized int8. */
EMU_T_AVX512 static inline __attribute__((always_inline)) void
dw_row16(const EmuDwRow *d, int32_t oy, int32_t *acc, int32_t *taps, const EmuDwRq *rq,
         int8_t *out) {
    const int32_t c = d->g.c;
    for (int32_t ox = 0; ox < d->g.ow; ox++) {
        const int32_t n = emu_dw_taps(&d->g, oy, ox, taps);
        /* one of acc and out is NULL (sums or requantized codes): no offset on a null pointer */
        int32_t *a = acc != NULL ? acc + (size_t)ox * c : NULL;
        int8_t *o = out != NULL ? out + (size_t)ox * c : NULL;
        if (d->zw != NULL && n == d->g.kh * d->g.kw)
            dw_pixel16(d, taps, n, true, a, rq, o);
        else
            dw_pixel16(d, taps, n, false, a, rq, o);
    }
}

EMU_T_AVX512 void emu_dw_row_avx512(const EmuDwRow *d, int32_t oy, int32_t *acc,
                                    int32_t *taps) {
    dw_row16(d, oy, acc, taps, NULL, NULL);
}

EMU_T_AVX512 void emu_dw_row_rq_avx512(const EmuDwRow *d, const EmuDwRq *rq, int32_t oy,
                                       int8_t *out, int32_t *taps) {
    dw_row16(d, oy, NULL, taps, rq, out);
}
#else
void emu_dw2_row_avx2(const EmuDw2Row *d, int32_t oy, int32_t *acc, const int8_t **rows) {
    (void)d, (void)oy, (void)acc, (void)rows;
    abort(); /* unreachable: emu_isa() is EMU_ISA_PORTABLE here */
}

void emu_dw_row_avx512(const EmuDwRow *d, int32_t oy, int32_t *acc, int32_t *taps) {
    (void)d, (void)oy, (void)acc, (void)taps;
    abort(); /* unreachable: emu_isa() is EMU_ISA_PORTABLE here */
}

void emu_dw_row_rq_avx512(const EmuDwRow *d, const EmuDwRq *rq, int32_t oy, int8_t *out,
                          int32_t *taps) {
    (void)d, (void)rq, (void)oy, (void)out, (void)taps;
    abort(); /* unreachable: emu_isa() is EMU_ISA_PORTABLE here */
}
#endif
