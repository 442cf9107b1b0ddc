/*
 * simd.c: emu_isa() and the kernels of simd.h in AVX2 and AVX-512 intrinsics: the narrow
 * requantization (and MUL's formula on it), the int16 GEMM for CPUs without VNNI and the VBMI
 * table lookup (the multiplier-1 depthwise row: simd_dw.c). Each function's exactness argument
 * is beside its declaration in simd.h; the requantization's, the subtle one, is here.
 *
 * Why the vector requantization is the C one (requant_narrow, kernel_common.c) lane for lane:
 * - v = (acc + bias) * 2^left in int32: the narrow case is chosen at prepare only when
 *   (|acc| + |bias|) * 2^left < 2^31, so the int32 add and the left shift (vpsllvd: the two's
 *   complement bits moved left, exact when nothing overflows) are exact.
 * - SRDHM: M < 2^31 and |v| < 2^31, so v * M is one signed 32x32->64 product (vpmuldq takes the
 *   low int32 of each int64 lane: even lanes as they are, odd lanes after a 32-bit shift) and
 *   v * M + 2^30 cannot overflow int64 (|v * M| < 2^62). The C keeps bits 31..62 of that sum as
 *   the int32 h (it fits: |v * M| / 2^31 < 2^31); here a logical shift right by 31 puts them in
 *   the low half of an even lane, a shift left by 1 in the high half of an odd lane, and one
 *   blend joins the halves.
 * - RDBPOT: rem = h & mask, thr = (mask >> 1) + (h < 0), t = (h >> right) + (rem > thr), the
 *   same int32 operations (arithmetic shift by a per-lane count, signed compare; h < 0 is
 *   -(h >> 31)). t cannot overflow (a carry needs right >= 1).
 * - clamp(clamp(t, +-2^16) + z, lo, hi) = clamp(t, lo - z, hi - z) + z: lo and hi lie in
 *   [-128, 127] and |z| <= 128, so both sides are the integer clamp of t + z and nothing
 *   overflows; the result lies in [-128, 127], so narrowing to int8 (truncation or signed
 *   saturation) changes nothing.
 * Tails: AVX-512 masks the last lanes; AVX2 copies the last < 8 values into a zero-filled block.
 */
#include "simd.h"

#include <stdlib.h>
#include <string.h>

size_t emu_gemm_s16_avx2_size(int32_t cols, int32_t depth) {
    return (size_t)(cols + 7) / 8 * 8 * (size_t)depth;
}

/* Panel q (columns 8q..8q+7), pair j (k = 2j, 2j+1), lane c: 2 int16 at
 * ((q * depth / 2 + j) * 8 + c) * 2; columns past `cols` and k past `wdepth` are zeros. */
void emu_gemm_s16_avx2_pack(const int8_t *w, int32_t cols, int32_t wdepth, int32_t depth,
                            int16_t *packed) {
    memset(packed, 0, emu_gemm_s16_avx2_size(cols, depth) * sizeof *packed);
    for (int32_t o = 0; o < cols; o++)
        for (int32_t k = 0; k < wdepth; k++)
            packed[(((size_t)(o / 8) * (size_t)(depth / 2) + (size_t)(k / 2)) * 8 +
                    (size_t)(o % 8)) * 2 + (size_t)(k % 2)] = w[(size_t)o * wdepth + k];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "simd_x86.h"

#define EMU_T_AVX2 __attribute__((target("avx2")))
#define EMU_T_VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

static int cpu_isa;
static bool cpu_vbmi;
__attribute__((constructor)) static void detect_isa(void) {
    __builtin_cpu_init();
    cpu_vbmi = __builtin_cpu_supports("avx512vbmi");
    cpu_isa = EMU_ISA_PORTABLE;
    if (__builtin_cpu_supports("avx2")) cpu_isa = EMU_ISA_AVX2;
    if (cpu_isa == EMU_ISA_AVX2 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        cpu_isa = EMU_ISA_AVX512;
}

/* 8 lanes (simd.c header for why this is requant_narrow); lo and hi minus z. */
EMU_T_AVX2 static inline __m256i narrow8(__m256i v, __m256i m, __m256i right, __m256i mask,
                                         __m256i z, __m256i lo, __m256i hi) {
    const __m256i round = _mm256_set1_epi64x(INT64_C(1) << 30);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(v, m), round);
    const __m256i odd = _mm256_add_epi64(
        _mm256_mul_epi32(_mm256_srli_epi64(v, 32), _mm256_srli_epi64(m, 32)), round);
    const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1),
                                         0xAA);
    const __m256i rem = _mm256_and_si256(h, mask);
    const __m256i thr = _mm256_sub_epi32(_mm256_srai_epi32(mask, 1), _mm256_srai_epi32(h, 31));
    __m256i t = _mm256_srav_epi32(h, right);
    t = _mm256_sub_epi32(t, _mm256_cmpgt_epi32(rem, thr)); /* true is -1 */
    return _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(t, lo), hi), z);
}

EMU_T_AVX2 static inline void store8(int8_t *out, __m256i q) {
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i *)(void *)out, _mm_packs_epi16(w, w));
}

/* 8 requantized lanes of acc + e (v = (acc + bias) << left, then narrow8) as int32. */
EMU_T_AVX2 static inline __m256i requant8(const EmuNarrow *k, const int32_t *acc, int32_t e,
                                          __m256i z, __m256i lo, __m256i hi) {
#define LD(p) _mm256_loadu_si256((const __m256i *)(const void *)((p) + e))
    const __m256i v = _mm256_sllv_epi32(_mm256_add_epi32(LD(acc), LD(k->bias)), LD(k->left));
    return narrow8(v, LD(k->mult), LD(k->right), LD(k->mask), z, lo, hi);
#undef LD
}

/* Whole blocks of 32 go out in one store (each lane already lies in [-128, 127], so the
 * saturating packs are exact; the permute undoes their order within 128 bits), then blocks of
 * 8, then the last < 8 values through zero-filled copies (M = 0 and no shift are valid
 * constants). */
EMU_T_AVX2 void emu_requant_narrow_avx2(const EmuNarrow *k, const int32_t *acc, int8_t *out,
                                        int32_t n) {
    const __m256i vz = _mm256_set1_epi32(k->z), vlo = _mm256_set1_epi32(k->lo - k->z),
                  vhi = _mm256_set1_epi32(k->hi - k->z);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int32_t e = 0;
    for (; e + 32 <= n; e += 32) {
        const __m256i q0 = requant8(k, acc, e, vz, vlo, vhi);
        const __m256i q1 = requant8(k, acc, e + 8, vz, vlo, vhi);
        const __m256i q2 = requant8(k, acc, e + 16, vz, vlo, vhi);
        const __m256i q3 = requant8(k, acc, e + 24, vz, vlo, vhi);
        const __m256i b =
            _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
        _mm256_storeu_si256((__m256i *)(void *)(out + e), _mm256_permutevar8x32_epi32(b, order));
    }
    for (; e + 8 <= n; e += 8) store8(out + e, requant8(k, acc, e, vz, vlo, vhi));
    if (e < n) {
        int32_t a[8] = {0}, b[8] = {0}, l[8] = {0}, m[8] = {0}, r[8] = {0}, s[8] = {0};
        const size_t c = (size_t)(n - e);
        memcpy(a, acc + e, c * sizeof *a), memcpy(b, k->bias + e, c * sizeof *b);
        memcpy(l, k->left + e, c * sizeof *l), memcpy(m, k->mult + e, c * sizeof *m);
        memcpy(r, k->right + e, c * sizeof *r), memcpy(s, k->mask + e, c * sizeof *s);
        const EmuNarrow t = {b, l, m, r, s, k->z, k->lo, k->hi};
        int8_t o[8];
        store8(o, requant8(&t, a, 0, vz, vlo, vhi));
        memcpy(out + e, o, c);
    }
}

/* 8 lanes of emu_requant_nudge_avx2 (simd.h): t + z, unclamped, as int32. The odd lanes'
 * multipliers are read one element on (vpmuldq reads each qword's low dword: mult[e + 2i + 1]),
 * which needs no shift; `shift`: k->left is read, `neg`: k->neg is (else every lane's is -1). */
EMU_T_AVX2 static inline __attribute__((always_inline)) __m256i
nudge8(const EmuNudge *k, const int32_t *acc, int32_t e, bool shift, bool neg) {
#define LD(p) _mm256_loadu_si256((const __m256i *)(const void *)((p) + e))
    __m256i v = _mm256_add_epi32(LD(acc), LD(k->bias));
    if (shift) v = _mm256_sllv_epi32(v, LD(k->left));
    const __m256i round = _mm256_set1_epi64x(INT64_C(1) << 30);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(v, LD(k->mult)), round);
    const __m256i odd =
        _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(v, 32), LD(k->mult + 1)), round);
    const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1),
                                         0xAA);
    __m256i sign = _mm256_srai_epi32(h, 31); /* -[h < 0] */
    if (neg) sign = _mm256_and_si256(sign, LD(k->neg));
    return _mm256_srav_epi32(_mm256_add_epi32(_mm256_add_epi32(h, LD(k->nudge)), sign),
                             LD(k->right));
#undef LD
}

/* 8 lanes to int8 through the saturating packs, clamped in int8 (the low 8 bytes). */
EMU_T_AVX2 static inline __m128i pack8(__m256i q, __m128i lo, __m128i hi) {
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    return _mm_min_epi8(_mm_max_epi8(_mm_packs_epi16(w, w), lo), hi);
}

EMU_T_AVX2 static inline __attribute__((always_inline)) void
nudge_run(const EmuNudge *k, const int32_t *acc, int8_t *out, int32_t n, bool shift, bool neg) {
    const __m256i lo = _mm256_set1_epi8((int8_t)k->lo), hi = _mm256_set1_epi8((int8_t)k->hi);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int32_t e = 0;
    for (; e + 32 <= n; e += 32) {
        const __m256i q0 = nudge8(k, acc, e, shift, neg), q1 = nudge8(k, acc, e + 8, shift, neg);
        const __m256i q2 = nudge8(k, acc, e + 16, shift, neg);
        const __m256i q3 = nudge8(k, acc, e + 24, shift, neg);
        __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
        b = _mm256_min_epi8(_mm256_max_epi8(b, lo), hi);
        _mm256_storeu_si256((__m256i *)(void *)(out + e), _mm256_permutevar8x32_epi32(b, order));
    }
    const __m128i lo8 = _mm256_castsi256_si128(lo), hi8 = _mm256_castsi256_si128(hi);
    for (; e + 8 <= n; e += 8)
        _mm_storel_epi64((__m128i *)(void *)(out + e),
                         pack8(nudge8(k, acc, e, shift, neg), lo8, hi8));
    if (e < n) { /* zero-filled copies: M = 0, nudge 0, no shifts are valid constants */
        int32_t a[8] = {0}, b[8] = {0}, l[8] = {0}, m[9] = {0}, r[8] = {0}, u[8] = {0}, g[8] = {0};
        const size_t c = (size_t)(n - e);
        memcpy(a, acc + e, c * sizeof *a), memcpy(b, k->bias + e, c * sizeof *b);
        if (shift) memcpy(l, k->left + e, c * sizeof *l);
        if (neg) memcpy(g, k->neg + e, c * sizeof *g);
        memcpy(m, k->mult + e, c * sizeof *m), memcpy(r, k->right + e, c * sizeof *r);
        memcpy(u, k->nudge + e, c * sizeof *u);
        const EmuNudge t = {b, l, m, r, u, g, k->lo, k->hi};
        int8_t o[8];
        _mm_storel_epi64((__m128i *)(void *)o, pack8(nudge8(&t, a, 0, shift, neg), lo8, hi8));
        memcpy(out + e, o, c);
    }
}

EMU_T_AVX2 void emu_requant_nudge_avx2(const EmuNudge *k, const int32_t *acc, int8_t *out,
                                       int32_t n) {
    if (k->left != NULL && k->neg != NULL)
        nudge_run(k, acc, out, n, true, true);
    else if (k->left != NULL)
        nudge_run(k, acc, out, n, true, false);
    else if (k->neg != NULL)
        nudge_run(k, acc, out, n, false, true);
    else
        nudge_run(k, acc, out, n, false, false);
}

/* narrow16 on memory: `m` the lanes to load and store. */
EMU_T_AVX512 static inline void narrow16_mem(const EmuNarrow *k, const int32_t *acc, int32_t e,
                                             __m512i z, __m512i lo, __m512i hi, int8_t *out,
                                             __mmask16 m) {
#define LD(p) _mm512_maskz_loadu_epi32(m, (p) + e)
    const __m512i v = _mm512_sllv_epi32(_mm512_add_epi32(LD(acc), LD(k->bias)), LD(k->left));
    const __m512i q = emu_narrow16(v, LD(k->mult), LD(k->right), LD(k->mask), z, lo, hi);
#undef LD
    _mm512_mask_cvtepi32_storeu_epi8(out + e, m, q);
}

EMU_T_AVX512 void emu_requant_narrow_avx512(const EmuNarrow *k, const int32_t *acc, int8_t *out,
                                            int32_t n) {
    const __m512i vz = _mm512_set1_epi32(k->z), vlo = _mm512_set1_epi32(k->lo - k->z),
                  vhi = _mm512_set1_epi32(k->hi - k->z);
    int32_t e = 0;
    for (; e + 16 <= n; e += 16) narrow16_mem(k, acc, e, vz, vlo, vhi, out, (__mmask16)0xFFFF);
    if (e < n) narrow16_mem(k, acc, e, vz, vlo, vhi, out, (__mmask16)((1u << (n - e)) - 1u));
}
/* 4 rows x `np` (1 or 2) panels of 8 columns: 8 sums, 2 filter vectors and the 4 row
 * broadcasts stay in the 16 ymm registers. With 3 panels gcc loaded all 4 broadcasts ahead of
 * the 12 multiply-adds and kept 5 of the 12 sums on the stack (a load and a store each per k
 * pair): efficientnet_b0's GEMM samples fell by a quarter with 2. */
EMU_T_AVX2 static inline __attribute__((always_inline)) void
sums_s16(const int16_t *a, const int16_t *w, size_t panel, int32_t depth, int np,
         __m256i acc[4][2]) {
    for (int r = 0; r < 4; r++)
        for (int q = 0; q < np; q++) acc[r][q] = _mm256_setzero_si256();
    const int16_t *a0 = a, *a1 = a + depth, *a2 = a1 + depth, *a3 = a2 + depth;
    for (int32_t k = 0; k < depth; k += 2) {
        __m256i b[2];
        for (int q = 0; q < np; q++) {
            const int16_t *g = w + q * panel + (size_t)k * 8;
            b[q] = _mm256_loadu_si256((const __m256i *)(const void *)g);
        }
        const int16_t *rows[4] = {a0, a1, a2, a3};
        for (int r = 0; r < 4; r++) {
            int32_t pair;
            memcpy(&pair, rows[r] + k, sizeof pair);
            const __m256i x = _mm256_set1_epi32(pair);
            for (int q = 0; q < np; q++)
                acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(x, b[q]));
        }
    }
}

EMU_T_AVX2 static inline __attribute__((always_inline)) void
tile_s16(const int16_t *a, const int16_t *w, size_t panel, int32_t depth, int32_t *out,
         int32_t ldo, int np, int32_t left) {
    __m256i acc[4][2];
    sums_s16(a, w, panel, depth, np, acc);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int q = 0; q < np; q++) { /* lane c stored when 8q + c < left */
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left - 8 * q), lanes);
        for (int r = 0; r < 4; r++)
            _mm256_maskstore_epi32(out + (size_t)r * ldo + 8 * q, m, acc[r][q]);
    }
}

/* 6 rows x 16 columns (two whole panels): 12 sums, the 2 filter vectors and one row broadcast
 * at a time in the 16 ymm registers, each as a named variable (gcc 12 allocates those without
 * the copies it made of an array's), so each k pair's two filter loads serve 12 multiply-adds. */
#define MADD2(r)                                                                                 \
    memcpy(&pair, a + (size_t)(r) * depth + k, sizeof pair);                                     \
    x = _mm256_set1_epi32(pair);                                                                 \
    c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(x, b0));                               \
    c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(x, b1))
EMU_T_AVX2 static void tile6_s16(const int16_t *a, const int16_t *w, size_t panel, int32_t depth,
                                 int32_t *out, int32_t ldo) {
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
            c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const __m256i *w0 = (const __m256i *)(const void *)w;
    const __m256i *w1 = (const __m256i *)(const void *)(w + panel);
    for (int32_t k = 0; k < depth; k += 2) {
        int32_t pair; /* row r's (a[k], a[k + 1]) */
        const __m256i b0 = _mm256_loadu_si256(w0 + k / 2), b1 = _mm256_loadu_si256(w1 + k / 2);
        __m256i x;
        MADD2(0);
        MADD2(1);
        MADD2(2);
        MADD2(3);
        MADD2(4);
        MADD2(5);
    }
#define ST2(r)                                                                                   \
    _mm256_storeu_si256((__m256i *)(void *)(out + (size_t)(r) * ldo), c##r##0);                  \
    _mm256_storeu_si256((__m256i *)(void *)(out + (size_t)(r) * ldo + 8), c##r##1)
    ST2(0);
    ST2(1);
    ST2(2);
    ST2(3);
    ST2(4);
    ST2(5);
#undef ST2
}
#undef MADD2

EMU_T_AVX2 void emu_gemm_s16_avx2(const int16_t *a, const int16_t *packed, int32_t *out,
                                  int32_t rows, int32_t cols, int32_t depth, int32_t ldo) {
    const size_t panel = (size_t)depth * 8;
    const int32_t rows6 = rows / 12 * 12; /* in 6-row tiles; the rest (a multiple of 4) in 4 */
    for (int32_t o = 0; o < cols; o += 16) {
        const int np = cols - o > 8 ? 2 : 1; /* the second panel masked past cols */
        const int16_t *w = packed + (size_t)(o / 8) * panel;
        int32_t p = 0;
        for (; np == 2 && cols - o >= 16 && p < rows6; p += 6)
            tile6_s16(a + (size_t)p * depth, w, panel, depth, out + (size_t)p * ldo + o, ldo);
        for (; p < rows; p += 4) {
            const int16_t *ap = a + (size_t)p * depth;
            int32_t *op = out + (size_t)p * ldo + o;
            if (np == 2)
                tile_s16(ap, w, panel, depth, op, ldo, 2, cols - o);
            else
                tile_s16(ap, w, panel, depth, op, ldo, 1, cols - o);
        }
    }
}

/* 16 codes minus z as int16 lanes (|x - z| <= 255): x[0] in every lane for step 0, else
 * the first `k` (<= 16) codes (the lanes past it zero). */
EMU_T_AVX2 static inline __m256i codes16(const int8_t *x, uint32_t step, uint32_t k, __m256i z) {
    if (step == 0) return _mm256_sub_epi16(_mm256_set1_epi16(x[0]), z);
    __m128i v;
    if (k == 16) {
        v = _mm_loadu_si128((const __m128i *)(const void *)x);
    } else {
        int8_t tmp[16] = {0};
        memcpy(tmp, x, k);
        v = _mm_loadu_si128((const __m128i *)(void *)tmp);
    }
    return _mm256_sub_epi16(_mm256_cvtepi8_epi16(v), z);
}

/* 8 lanes of emu_mul_narrow_avx512's mul_round16 (simd.h's proof): SRDHM as narrow8's, then
 * (h + nudge + (h < 0 ? neg : 0)) >> e. */
EMU_T_AVX2 static inline __m256i mul_round8(__m256i p, __m256i m, __m128i e, __m256i nudge,
                                            __m256i neg) {
    const __m256i round = _mm256_set1_epi64x(INT64_C(1) << 30);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(p, m), round);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(p, 32), m), round);
    const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1),
                                         0xAA);
    const __m256i up = _mm256_add_epi32(_mm256_add_epi32(h, nudge),
                                        _mm256_and_si256(_mm256_srai_epi32(h, 31), neg));
    return _mm256_sra_epi32(up, e);
}

/* The AVX-512 formula's int16 lanes at half the width: per step 32 codes, as two halves of 16
 * (vpmullw / vpmulhw give the int32 product's halves, the unpacks join them in 128-bit lanes,
 * the packs undo that order within each 128 bits and one permute orders the 64-bit pieces). */
EMU_T_AVX2 void emu_mul_narrow_avx2(const EmuMulNarrow *k, const int8_t *a, const int8_t *b,
                                    uint32_t a_step, uint32_t b_step, uint32_t n, int8_t *out) {
    const int32_t e = k->right < 17 ? k->right : 17; /* |h| < 2^16: t = 0 from e = 17 on */
    const int32_t nudge = (e > 0 ? INT32_C(1) << (e - 1) : 0) + k->z * (INT32_C(1) << e);
    const __m256i z1 = _mm256_set1_epi16((int16_t)k->z1), z2 = _mm256_set1_epi16((int16_t)k->z2),
                  m = _mm256_set1_epi32(k->mult), vn = _mm256_set1_epi32(nudge),
                  neg = _mm256_set1_epi32(e > 0 ? -1 : 0);
    const __m128i ve = _mm_cvtsi32_si128(e);
    const __m256i lo = _mm256_set1_epi8((int8_t)k->lo), hi = _mm256_set1_epi8((int8_t)k->hi);
    for (uint32_t i = 0; i < n; i += 32) {
        const uint32_t c = n - i < 32 ? n - i : 32;
        __m256i half[2];
        for (uint32_t h = 0; h < 2; h++) {
            const uint32_t j = i + 16 * h, r = c > 16 * h ? c - 16 * h : 0, kk = r > 16 ? 16 : r;
            if (kk == 0) {
                half[h] = _mm256_setzero_si256();
                continue;
            }
            const __m256i x = codes16(a + j * a_step, a_step, kk, z1);
            const __m256i y = codes16(b + j * b_step, b_step, kk, z2);
            const __m256i pl = _mm256_mullo_epi16(x, y), ph = _mm256_mulhi_epi16(x, y);
            const __m256i t0 = mul_round8(_mm256_unpacklo_epi16(pl, ph), m, ve, vn, neg);
            const __m256i t1 = mul_round8(_mm256_unpackhi_epi16(pl, ph), m, ve, vn, neg);
            half[h] = _mm256_packs_epi32(t0, t1); /* 16 int16 in order within each 128 bits */
        }
        /* bytes: [h0 lane0, h1 lane0 | h0 lane1, h1 lane1] in 64-bit pieces -> 0, 2, 1, 3 */
        const __m256i q = _mm256_permute4x64_epi64(_mm256_packs_epi16(half[0], half[1]), 0xD8);
        const __m256i v = _mm256_min_epi8(_mm256_max_epi8(q, lo), hi);
        if (c == 32) {
            _mm256_storeu_si256((__m256i *)(void *)(out + i), v);
        } else {
            int8_t tmp[32];
            _mm256_storeu_si256((__m256i *)(void *)tmp, v);
            memcpy(out + i, tmp, c);
        }
    }
}

/* 32 codes minus z as int16 lanes (|x - z| <= 255): x[0] in every lane for step 0, else the
 * codes under k (the lanes past it zero). */
EMU_T_AVX512 static inline __m512i codes32(const int8_t *x, uint32_t step, __mmask32 k,
                                           __m512i z) {
    if (step == 0) return _mm512_sub_epi16(_mm512_set1_epi16(x[0]), z);
    return _mm512_sub_epi16(_mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(k, x)), z);
}

/* RDBPOT(SRDHM(p, m), e) + z of 16 int32 products p, e and z the same in every lane:
 * SRDHM as emu_narrow16's; then (h + nudge + (h < 0 ? neg : 0)) >> e with nudge =
 * 2^(e-1) + z * 2^e, neg = -1 for e >= 1, and nudge = z, neg = 0 for e = 0 (simd.h's proof). */
EMU_T_AVX512 static inline __m512i mul_round16(__m512i p, __m512i m, __m128i e, __m512i nudge,
                                               __m512i neg) {
    const __m512i round = _mm512_set1_epi64(INT64_C(1) << 30);
    const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(p, m), round);
    const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(p, 32), m), round);
    const __m512i h = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(even, 31),
                                              _mm512_slli_epi64(odd, 1));
    const __m512i up = _mm512_add_epi32(_mm512_add_epi32(h, nudge),
                                        _mm512_and_si512(_mm512_srai_epi32(h, 31), neg));
    return _mm512_sra_epi32(up, e);
}

/* 32 outputs as int16 (t + z, saturated: the int8 pack after it saturates the same way). */
typedef struct {
    __m512i z1, z2, m, nudge, neg;
    __m128i e;
} MulLanes;

EMU_T_AVX512 static inline __m512i mul32(const MulLanes *l, const int8_t *a, const int8_t *b,
                                         uint32_t a_step, uint32_t b_step, __mmask32 c) {
    const __m512i x = codes32(a, a_step, c, l->z1), y = codes32(b, b_step, c, l->z2);
    const __m512i pl = _mm512_mullo_epi16(x, y), ph = _mm512_mulhi_epi16(x, y);
    const __m512i t0 = mul_round16(_mm512_unpacklo_epi16(pl, ph), l->m, l->e, l->nudge, l->neg);
    const __m512i t1 = mul_round16(_mm512_unpackhi_epi16(pl, ph), l->m, l->e, l->nudge, l->neg);
    return _mm512_packs_epi32(t0, t1); /* undoes the unpacks' order within each 128 bits */
}

EMU_T_AVX512 void emu_mul_narrow_avx512(const EmuMulNarrow *k, const int8_t *a,
                                        const int8_t *b, uint32_t a_step, uint32_t b_step,
                                        uint32_t n, int8_t *out) {
    const int32_t e = k->right < 17 ? k->right : 17; /* |h| < 2^16: t = 0 from e = 17 on */
    const int32_t nudge = (e > 0 ? INT32_C(1) << (e - 1) : 0) + k->z * (INT32_C(1) << e);
    const MulLanes l = {_mm512_set1_epi16((int16_t)k->z1), _mm512_set1_epi16((int16_t)k->z2),
                        _mm512_set1_epi32(k->mult), _mm512_set1_epi32(nudge),
                        _mm512_set1_epi32(e > 0 ? -1 : 0), _mm_cvtsi32_si128(e)};
    const __m512i lo = _mm512_set1_epi8((int8_t)k->lo), hi = _mm512_set1_epi8((int8_t)k->hi);
    const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    for (uint32_t i = 0; i < n; i += 64) {
        const __mmask64 c = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
        const __m512i v0 = mul32(&l, a + i * a_step, b + i * b_step, a_step, b_step,
                                 (__mmask32)c);
        const uint32_t j = i + 32; /* the second 32 (all masked off past n: read nothing) */
        const __m512i v1 = mul32(&l, a + j * a_step, b + j * b_step, a_step, b_step,
                                 (__mmask32)(c >> 32));
        const __m512i q = _mm512_permutexvar_epi64(order, _mm512_packs_epi16(v0, v1));
        _mm512_mask_storeu_epi8(out + i, c, _mm512_min_epi8(_mm512_max_epi8(q, lo), hi));
    }
}

EMU_T_VBMI void emu_lut_vbmi(const int8_t *table, const int8_t *x, int8_t *y, uint64_t n) {
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64),
                  t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    const __m512i flip = _mm512_set1_epi8(-128);
    for (uint64_t i = 0; i < n; i += 64) {
        const __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
        const __m512i idx = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, x + i), flip);
        const __m512i low = _mm512_permutex2var_epi8(t0, idx, t1);  /* entries 0..127 */
        const __m512i high = _mm512_permutex2var_epi8(t2, idx, t3); /* entries 128..255 */
        const __m512i v = _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), low, high);
        _mm512_mask_storeu_epi8(y + i, m, v);
    }
}

bool emu_lut_vbmi_ready(void) { return cpu_vbmi && emu_isa() == EMU_ISA_AVX512; }

EMU_T_AVX2 void emu_lut_avx2(const int8_t *table, const int8_t *x, int8_t *y, uint64_t n) {
    __m256i rows[16];
    for (int j = 0; j < 16; j++) /* row j in both 128-bit halves */
        rows[j] = _mm256_broadcastsi128_si256(
            _mm_loadu_si128((const __m128i *)(const void *)(table + 16 * j)));
    const __m256i flip = _mm256_set1_epi8(-128), low = _mm256_set1_epi8(15);
    for (uint64_t i = 0; i < n; i += 32) {
        const uint64_t c = n - i < 32 ? n - i : 32;
        __m256i v;
        int8_t tmp[32];
        if (c == 32) {
            v = _mm256_loadu_si256((const __m256i *)(const void *)(x + i));
        } else { /* the last < 32 codes through a copy */
            memset(tmp, 0, sizeof tmp);
            memcpy(tmp, x + i, c);
            v = _mm256_loadu_si256((const __m256i *)(void *)tmp);
        }
        const __m256i u = _mm256_xor_si256(v, flip), at = _mm256_and_si256(u, low);
        const __m256i b4 = _mm256_slli_epi16(u, 3), b5 = _mm256_slli_epi16(u, 2),
                      b6 = _mm256_slli_epi16(u, 1);
#define ROW(j) _mm256_shuffle_epi8(rows[j], at)
#define PAIR(i) _mm256_blendv_epi8(ROW(2 * (i)), ROW(2 * (i) + 1), b4)
#define QUAD(i) _mm256_blendv_epi8(PAIR(2 * (i)), PAIR(2 * (i) + 1), b5)
#define OCT(i) _mm256_blendv_epi8(QUAD(2 * (i)), QUAD(2 * (i) + 1), b6)
        const __m256i r = _mm256_blendv_epi8(OCT(0), OCT(1), u);
#undef OCT
#undef QUAD
#undef PAIR
#undef ROW
        if (c == 32) {
            _mm256_storeu_si256((__m256i *)(void *)(y + i), r);
        } else {
            _mm256_storeu_si256((__m256i *)(void *)tmp, r);
            memcpy(y + i, tmp, c);
        }
    }
}
#else
#if defined(__aarch64__) && defined(__ARM_NEON)
static const int cpu_isa = EMU_ISA_NEON; /* NEON is part of the aarch64 base */
#else
static const int cpu_isa = EMU_ISA_PORTABLE;
#endif

bool emu_lut_vbmi_ready(void) { return false; }

void emu_gemm_s16_avx2(const int16_t *a, const int16_t *packed, int32_t *out, int32_t rows,
                       int32_t cols, int32_t depth, int32_t ldo) {
    (void)a, (void)packed, (void)out, (void)rows, (void)cols, (void)depth, (void)ldo;
    abort(); /* unreachable: emu_isa() is EMU_ISA_PORTABLE here */
}

void emu_mul_narrow_avx2(const EmuMulNarrow *k, const int8_t *a, const int8_t *b,
                         uint32_t a_step, uint32_t b_step, uint32_t n, int8_t *out) {
    (void)k, (void)a, (void)b, (void)a_step, (void)b_step, (void)n, (void)out;
    abort(); /* unreachable: emu_isa() is EMU_ISA_PORTABLE here */
}

void emu_mul_narrow_avx512(const EmuMulNarrow *k, const int8_t *a, const int8_t *b,
                           uint32_t a_step, uint32_t b_step, uint32_t n, int8_t *out) {
    emu_mul_narrow_avx2(k, a, b, a_step, b_step, n, out);
}

void emu_lut_vbmi(const int8_t *table, const int8_t *x, int8_t *y, uint64_t n) {
    (void)table, (void)x, (void)y, (void)n;
    abort(); /* unreachable: emu_lut_vbmi_ready() is false here */
}

void emu_lut_avx2(const int8_t *table, const int8_t *x, int8_t *y, uint64_t n) {
    (void)table, (void)x, (void)y, (void)n;
    abort(); /* unreachable: emu_isa() is not AVX2 here */
}

void emu_requant_narrow_avx2(const EmuNarrow *k, const int32_t *acc, int8_t *out, int32_t n) {
    (void)k, (void)acc, (void)out, (void)n;
    abort(); /* unreachable: emu_isa() is EMU_ISA_PORTABLE here */
}

void emu_requant_narrow_avx512(const EmuNarrow *k, const int32_t *acc, int8_t *out, int32_t n) {
    emu_requant_narrow_avx2(k, acc, out, n);
}

void emu_requant_nudge_avx2(const EmuNudge *k, const int32_t *acc, int8_t *out, int32_t n) {
    (void)k, (void)acc, (void)out, (void)n;
    abort(); /* unreachable: emu_isa() is EMU_ISA_PORTABLE here */
}
#endif

int emu_isa(void) {
    const char *portable = getenv("MDLA_EMU_PORTABLE");
    if (portable != NULL && strcmp(portable, "1") == 0) return EMU_ISA_PORTABLE;
    const char *v = getenv("MDLA_EMU_ISA");
    if (v != NULL && strcmp(v, "portable") == 0) return EMU_ISA_PORTABLE;
    if (cpu_isa == EMU_ISA_NEON) return EMU_ISA_NEON; /* no level between NEON and the C */
    int cap = EMU_ISA_AVX512;
    if (v != NULL && strcmp(v, "avx2") == 0) cap = EMU_ISA_AVX2;
    return cpu_isa < cap ? cpu_isa : cap;
}
