/*
 * simd_add.c: int8 ADD / SUB (k_add.c) in AVX-512 VBMI lanes, 64 codes a step, instead of one
 * 256 x 256 table read per code (emu_add_vec, simd.h says why it is the table's integers).
 *
 * Per step: each of the eight byte planes (byte j of A or of +-B, a 256-entry byte table) is
 * looked up as emu_lut_vbmi does (two vpermi2b, a blend on the index's top bit); the four
 * planes of each side are interleaved by unpacklo/hi_epi8 then unpacklo/hi_epi16 into four
 * registers of int32 values, register k lane l holding code
 *   16 * (l / 4) + 4 * k + l % 4
 * (simd_dw4.c's order), where A[x] +- B[y] is one int32 add. packs_epi32(r0, r1),
 * packs_epi32(r2, r3) and packs_epi16 of the two put the 64 results back in code order.
 */
#include <stdlib.h>

#include "simd.h"

/* The sum's rounding: p = x * m, t = (p + round - corr [p < -2^30]) >> shift (simd.h). */
static void add_vec_rounding(EmuAddVec *k, int64_t m, int s, int rounding) {
    const int r = -s;
    k->mult = m;
    k->shift = 31 + r;
    if (rounding == 1) { /* single: (x m + 2^(30 + r)) >> (31 + r) */
        k->round = INT64_C(1) << (30 + r);
        k->corr = 0;
    } else { /* double: SRDHM then RDBPOT by r */
        k->round = emu_rq_round(r);
        k->corr = r > 0 ? INT64_C(1) << 31 : 0;
    }
}

bool emu_add_vec_pack(EmuAddVec *k, const int64_t *a, const int64_t *b, int sign, int64_t m,
                      int s, int rounding, int32_t z, int32_t lo, int32_t hi) {
    if (s > 0 || s < -31 || m < 0 || m >= (INT64_C(1) << 31)) return false;
    for (int i = 0; i < 256; i++) {
        /* |A|, |B| < 2^29 (k_add.c), so -B and the sum fit int32 */
        if (a[i] <= -(INT64_C(1) << 29) || a[i] >= (INT64_C(1) << 29)) return false;
        if (b[i] <= -(INT64_C(1) << 29) || b[i] >= (INT64_C(1) << 29)) return false;
        const uint32_t u = (uint32_t)(int32_t)a[i], v = (uint32_t)(int32_t)(sign > 0 ? b[i] : -b[i]);
        for (int j = 0; j < 4; j++) {
            k->planes[0][j][i] = (int8_t)(uint8_t)(u >> (8 * j));
            k->planes[1][j][i] = (int8_t)(uint8_t)(v >> (8 * j));
        }
    }
    add_vec_rounding(k, m, s, rounding);
    k->z = z;
    k->lo = lo;
    k->hi = hi;
    return true;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "simd_x86.h"

#define EMU_T_ADD __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

bool emu_add_vec_ready(void) { return emu_lut_vbmi_ready(); }

/* Byte plane `t` (256 entries) at the indices idx = code + 128 (top bit: which half). */
EMU_T_ADD static inline __attribute__((always_inline)) __m512i plane(const int8_t *t, __m512i idx,
                                                                     __mmask64 top) {
    const __m512i low = _mm512_permutex2var_epi8(_mm512_loadu_si512((const void *)t), idx,
                                                 _mm512_loadu_si512((const void *)(t + 64)));
    const __m512i high =
        _mm512_permutex2var_epi8(_mm512_loadu_si512((const void *)(t + 128)), idx,
                                 _mm512_loadu_si512((const void *)(t + 192)));
    return _mm512_mask_blend_epi8(top, low, high);
}

/* The int32 values of one side's four planes at codes x, in the header's lane order. */
EMU_T_ADD static inline __attribute__((always_inline)) void
values(const int8_t (*p)[256], __m512i x, __m512i *v) {
    const __m512i idx = _mm512_xor_si512(x, _mm512_set1_epi8((char)0x80));
    const __mmask64 top = _mm512_movepi8_mask(idx);
    const __m512i b0 = plane(p[0], idx, top), b1 = plane(p[1], idx, top),
                  b2 = plane(p[2], idx, top), b3 = plane(p[3], idx, top);
    const __m512i lo01 = _mm512_unpacklo_epi8(b0, b1), hi01 = _mm512_unpackhi_epi8(b0, b1),
                  lo23 = _mm512_unpacklo_epi8(b2, b3), hi23 = _mm512_unpackhi_epi8(b2, b3);
    v[0] = _mm512_unpacklo_epi16(lo01, lo23);
    v[1] = _mm512_unpackhi_epi16(lo01, lo23);
    v[2] = _mm512_unpacklo_epi16(hi01, hi23);
    v[3] = _mm512_unpackhi_epi16(hi01, hi23);
}

/* t of the sums x (int32 lanes): emu_rq16 of simd_x86.h, every lane's products taking corr off
 * when p < -2^30 (corr is 0 in single rounding and for r = 0). */
EMU_T_ADD static inline __attribute__((always_inline)) __m512i requant(const EmuAddVec *k,
                                                                       __m512i x) {
    const __m512i m = _mm512_set1_epi64(k->mult);
    const EmuRqHalf h = {_mm512_set1_epi64(k->round), _mm512_set1_epi64(k->shift),
                         (__mmask8)0xFF};
    return emu_rq16(x, m, m, h, h, _mm512_set1_epi64(k->corr));
}

/* The 64 (masked: m) codes at a, or a[0] in every lane for a step of 0. */
EMU_T_ADD static inline __m512i codes(const int8_t *a, uint32_t step, __mmask64 m) {
    return step ? _mm512_maskz_loadu_epi8(m, a) : _mm512_set1_epi8(a[0]);
}

EMU_T_ADD void emu_add_vec(const EmuAddVec *k, const int8_t *a, const int8_t *b,
                           uint32_t a_step, uint32_t b_step, uint32_t n, int8_t *out) {
    const __m512i z = _mm512_set1_epi16((short)k->z), lo = _mm512_set1_epi8((char)k->lo),
                  hi = _mm512_set1_epi8((char)k->hi);
    for (uint32_t i = 0; i < n; i += 64) {
        const __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
        __m512i u[4], v[4];
        values(k->planes[0], codes(a + (size_t)i * a_step, a_step, m), u);
        values(k->planes[1], codes(b + (size_t)i * b_step, b_step, m), v);
        for (int j = 0; j < 4; j++) u[j] = requant(k, _mm512_add_epi32(u[j], v[j]));
        const __m512i q = _mm512_packs_epi16(_mm512_adds_epi16(_mm512_packs_epi32(u[0], u[1]), z),
                                             _mm512_adds_epi16(_mm512_packs_epi32(u[2], u[3]), z));
        _mm512_mask_storeu_epi8(out + i, m, _mm512_min_epi8(_mm512_max_epi8(q, lo), hi));
    }
}
#else
bool emu_add_vec_ready(void) { return false; }

void emu_add_vec(const EmuAddVec *k, const int8_t *a, const int8_t *b, uint32_t a_step,
                 uint32_t b_step, uint32_t n, int8_t *out) {
    (void)k, (void)a, (void)b, (void)a_step, (void)b_step, (void)n, (void)out;
    abort(); /* unreachable: emu_add_vec_ready() is false here */
}
#endif
