/*
 * layer_norm_x86.c: mdla_cpu_layer_norm (DEQUANTIZE -> LAYER_NORM -> QUANTIZE, float_ops.h) in
 * AVX2 for x86-64, the same bits as the portable C.
 *
 * As there, 8 rows run side by side, row l in lane l of one 8-float register per column i, and
 * every lane does its row's float32 operations in float_ops.h's order: the sums left to right
 * over i, one vaddps per column; the same +, -, *, / and sqrt, each correctly rounded in a
 * vector lane as in a scalar one, and no fused multiply-add (none is written, and the AVX2
 * target has none). What changes is the data's way in and out: 8 columns of the 8 rows are
 * loaded as eight 8-byte words and transposed in registers (byte, 16-bit and 32-bit unpacks),
 * instead of byte by byte through scratch; the codes go back the same way. QUANTIZE is
 * mdla_cpu_quantize's formula in lanes (float_ops.c states why it equals the reference):
 *   q = y / s;  a = |q| + 0.5;  f = a < 2^24 ? (int32)a : 2^24  (an ordered compare: NaN -> 2^24)
 *   r = q > 0 ? f : (q < 0 ? -f : 0);  code = clamp(r + z, -128, 127)
 * The last n % 8 columns go one column at a time through the same lanes; the last rows % 8
 * rows through the portable C (one row at a time there, as in mdla_cpu_layer_norm).
 */
#include "float_ops.h"

#ifdef MDLA_CPU_LN_AVX2
#include <immintrin.h>

#define T_AVX2 __attribute__((target("avx2")))

enum { L = MDLA_LN_LANES };
_Static_assert(MDLA_LN_LANES == 8, "one 8-float register per column");

/* a[k]'s low 8 bytes as row k of an 8 x 8 byte block; out[c / 2] holds column c (its 8 bytes,
 * row order) in its low half for even c, its high half for odd c. */
static inline T_AVX2 void transpose8(const __m128i a[8], __m128i out[4]) {
    const __m128i t0 = _mm_unpacklo_epi8(a[0], a[1]), t1 = _mm_unpacklo_epi8(a[2], a[3]);
    const __m128i t2 = _mm_unpacklo_epi8(a[4], a[5]), t3 = _mm_unpacklo_epi8(a[6], a[7]);
    const __m128i u0 = _mm_unpacklo_epi16(t0, t1), u1 = _mm_unpackhi_epi16(t0, t1);
    const __m128i u2 = _mm_unpacklo_epi16(t2, t3), u3 = _mm_unpackhi_epi16(t2, t3);
    out[0] = _mm_unpacklo_epi32(u0, u2);
    out[1] = _mm_unpackhi_epi32(u0, u2);
    out[2] = _mm_unpacklo_epi32(u1, u3);
    out[3] = _mm_unpackhi_epi32(u1, u3);
}

/* The low 8 bytes' codes dequantized: s * ((float)q - (float)z). */
static inline T_AVX2 __m256 dequant8(__m128i codes, __m256 s, __m256 z) {
    const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes));
    return _mm256_mul_ps(s, _mm256_sub_ps(q, z));
}

/* QUANTIZE of 8 floats (the header's formula), as int32 codes in [-128, 127]. */
static inline T_AVX2 __m256i quant8(__m256 y, __m256 s, __m256i z) {
    const __m256 q = _mm256_div_ps(y, s);
    const __m256 a = _mm256_add_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), q), _mm256_set1_ps(0.5f));
    const __m256 small = _mm256_cmp_ps(a, _mm256_set1_ps(16777216.0f), _CMP_LT_OQ);
    const __m256i big = _mm256_set1_epi32(16777216);
    const __m256i f = _mm256_blendv_epi8(big, _mm256_cvttps_epi32(a), _mm256_castps_si256(small));
    const __m256i pos = _mm256_castps_si256(_mm256_cmp_ps(q, _mm256_setzero_ps(), _CMP_GT_OQ));
    const __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(q, _mm256_setzero_ps(), _CMP_LT_OQ));
    const __m256i negf = _mm256_sub_epi32(_mm256_setzero_si256(), f);
    const __m256i r = _mm256_or_si256(_mm256_and_si256(f, pos), _mm256_and_si256(negf, neg));
    const __m256i v = _mm256_add_epi32(r, z);
    return _mm256_max_epi32(_mm256_min_epi32(v, _mm256_set1_epi32(127)), _mm256_set1_epi32(-128));
}

/* 8 int32 codes (already in [-128, 127]) as 8 bytes, in the low half. */
static inline T_AVX2 __m128i pack8(__m256i v) {
    const __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_packs_epi16(h, h);
}

/* Column i of the block's 8 rows (x: row 0's start), dequantized, one column at a time. */
static inline T_AVX2 __m256 column_in(const int8_t *x, size_t n, size_t i, __m256 s, __m256 z) {
    int8_t c[16] = {0};
    for (int l = 0; l < L; l++) c[l] = x[(size_t)l * n + i];
    return dequant8(_mm_loadu_si128((const __m128i *)c), s, z);
}

/* Pass 1: t[i] = column i dequantized; returns the lanes' sums, left to right over i. */
static T_AVX2 __m256 load_block(const int8_t *x, size_t n, __m256 s, __m256 z, float *t) {
    __m256 sum = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i a[8], c[4];
        for (int l = 0; l < L; l++) a[l] = _mm_loadl_epi64((const __m128i *)(x + (size_t)l * n + i));
        transpose8(a, c);
        for (int k = 0; k < 8; k++) {
            const __m128i col = k % 2 ? _mm_srli_si128(c[k / 2], 8) : c[k / 2];
            const __m256 v = dequant8(col, s, z);
            _mm256_storeu_ps(t + (i + (size_t)k) * L, v);
            sum = _mm256_add_ps(sum, v);
        }
    }
    for (; i < n; i++) {
        const __m256 v = column_in(x, n, i, s, z);
        _mm256_storeu_ps(t + i * L, v);
        sum = _mm256_add_ps(sum, v);
    }
    return sum;
}

/* Column i normalized (mean, inv; w and b when given) and quantized. */
static inline T_AVX2 __m256i out_column(const float *t, size_t i, __m256 mean, __m256 inv,
                                        const float *w, const float *b, __m256 s, __m256i z) {
    __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(t + i * L), mean), inv);
    if (w) v = _mm256_mul_ps(v, _mm256_set1_ps(w[i]));
    if (b) v = _mm256_add_ps(v, _mm256_set1_ps(b[i]));
    return quant8(v, s, z);
}

/* Pass 3: every column normalized, quantized and stored back in the rows (y: row 0's start). */
static T_AVX2 void store_block(const float *t, size_t n, __m256 mean, __m256 inv,
                               const float *w, const float *b, __m256 s, __m256i z, int8_t *y) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i a[8], r[4];
        for (int k = 0; k < 8; k += 2) {
            const __m128i lo = pack8(out_column(t, i + (size_t)k, mean, inv, w, b, s, z));
            const __m128i hi = pack8(out_column(t, i + (size_t)k + 1, mean, inv, w, b, s, z));
            a[k] = lo;
            a[k + 1] = hi;
        }
        transpose8(a, r); /* column k of this block is row k of the output */
        for (int l = 0; l < L; l++) {
            const __m128i row = l % 2 ? _mm_srli_si128(r[l / 2], 8) : r[l / 2];
            _mm_storel_epi64((__m128i *)(y + (size_t)l * n + i), row);
        }
    }
    for (; i < n; i++) {
        int8_t c[16];
        _mm_storeu_si128((__m128i *)c, pack8(out_column(t, i, mean, inv, w, b, s, z)));
        for (int l = 0; l < L; l++) y[(size_t)l * n + i] = c[l];
    }
}

/* Pass 2: the lanes' sums of squared deviations, left to right over i. */
static T_AVX2 __m256 deviations(const float *t, size_t n, __m256 mean) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n; i++) {
        const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(t + i * L), mean);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, d));
    }
    return acc;
}

T_AVX2 void mdla_cpu_layer_norm_avx2(const int8_t *x, size_t rows, size_t n, float s_in,
                                     int32_t z_in, const float *w, const float *b, float eps,
                                     float s_out, int32_t z_out, float *scratch, int8_t *y) {
    const __m256 si = _mm256_set1_ps(s_in), zi = _mm256_set1_ps((float)z_in);
    const __m256 so = _mm256_set1_ps(s_out), nf = _mm256_set1_ps((float)n);
    const __m256i zo = _mm256_set1_epi32(z_out);
    size_t r = 0;
    for (; r + L <= rows; r += L) {
        const __m256 mean = _mm256_div_ps(load_block(x + r * n, n, si, zi, scratch), nf);
        const __m256 var = _mm256_div_ps(deviations(scratch, n, mean), nf);
        const __m256 root = _mm256_sqrt_ps(_mm256_add_ps(var, _mm256_set1_ps(eps)));
        const __m256 inv = _mm256_div_ps(_mm256_set1_ps(1.0f), root);
        store_block(scratch, n, mean, inv, w, b, so, zo, y + r * n);
    }
    if (r < rows)
        mdla_cpu_layer_norm(x + r * n, rows - r, n, s_in, z_in, w, b, eps, s_out, z_out, scratch,
                            y + r * n);
}
#else
typedef int mdla_layer_norm_x86_unused; /* ISO C: a translation unit declares something */
#endif
