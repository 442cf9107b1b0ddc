/*
 * simd_x86.h: AVX-512 pieces that more than one x86-64 file inlines (emu_narrow16: simd.c,
 * simd_dw.c, gemm_rows.c; emu_rq16: simd_dw4.c, gemm_amx.c, simd_add.c).
 * Only included on x86-64 with gcc or clang; each function runs only when cpuid reports its
 * features (the callers' dispatch).
 */
#ifndef MDLA_EMU_SIMD_X86_H
#define MDLA_EMU_SIMD_X86_H

#include <immintrin.h>
#include <stdint.h>

#define EMU_T_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/* The narrow requantization of 16 int32 lanes v = acc + bias (simd.c's header for why this is
 * requant_narrow of kernel_common.c lane for lane) before its clamp: SRDHM by m, then RDBPOT by
 * right (msk = 2^right - 1). */
EMU_T_AVX512 static inline __m512i emu_narrow16_t(__m512i v, __m512i m, __m512i right,
                                                  __m512i msk) {
    const __m512i round = _mm512_set1_epi64(INT64_C(1) << 30);
    const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(v, m), round);
    const __m512i odd = _mm512_add_epi64(
        _mm512_mul_epi32(_mm512_srli_epi64(v, 32), _mm512_srli_epi64(m, 32)), round);
    const __m512i h = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(even, 31),
                                              _mm512_slli_epi64(odd, 1));
    const __m512i rem = _mm512_and_si512(h, msk);
    const __m512i thr = _mm512_sub_epi32(_mm512_srai_epi32(msk, 1), _mm512_srai_epi32(h, 31));
    const __m512i t = _mm512_srav_epi32(h, right);
    return _mm512_mask_add_epi32(t, _mm512_cmpgt_epi32_mask(rem, thr), t, _mm512_set1_epi32(1));
}

/* emu_narrow16_t, then clamp(., lo, hi) + z where lo and hi are the activation range minus z. */
EMU_T_AVX512 static inline __m512i emu_narrow16(__m512i v, __m512i m, __m512i right,
                                                __m512i msk, __m512i z, __m512i lo, __m512i hi) {
    const __m512i t = emu_narrow16_t(v, m, right, msk);
    return _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(t, lo), hi), z);
}

/* simd.h's int64 form of RDBPOT(SRDHM(v, m), r) (emu_dw4_row's proof there) on one half of 16
 * int32 lanes, the even or the odd lanes' products p = v * m in int64 lanes:
 *   (p + round - corr [p < -2^30, lanes in pos]) >> shift
 * with round = emu_rq_round(r) (simd.h), shift = 31 + r, corr = 2^31 and pos the lanes with
 * r >= 1 (ADD's single rounding, simd_add.c: round 2^(30 + r), corr 0). */
typedef struct {
    __m512i round, shift; /* int64 lanes */
    __mmask8 pos;
} EmuRqHalf;

EMU_T_AVX512 static inline __attribute__((always_inline)) __m512i emu_rq_half(__m512i p,
                                                                              EmuRqHalf h,
                                                                              __m512i corr) {
    const __mmask8 neg =
        _mm512_mask_cmplt_epi64_mask(h.pos, p, _mm512_set1_epi64(-(INT64_C(1) << 30)));
    __m512i t = _mm512_add_epi64(p, h.round);
    t = _mm512_mask_sub_epi64(t, neg, t, corr);
    return _mm512_srav_epi64(t, h.shift);
}

/* t of the 16 int32 lanes v: emu_rq_half of the even lanes' products v * m_e and of the odd
 * lanes' (v >> 32) * m_o (vpmuldq reads each qword's low dword, where m_e holds the even
 * lanes' multipliers and m_o the odd lanes'), the int32 results back in lane order. */
EMU_T_AVX512 static inline __attribute__((always_inline)) __m512i
emu_rq16(__m512i v, __m512i m_e, __m512i m_o, EmuRqHalf e, EmuRqHalf o, __m512i corr) {
    const __m512i te = emu_rq_half(_mm512_mul_epi32(v, m_e), e, corr);
    const __m512i to = emu_rq_half(_mm512_mul_epi32(_mm512_srli_epi64(v, 32), m_o), o, corr);
    return _mm512_mask_shuffle_epi32(te, (__mmask16)0xAAAA, to, _MM_PERM_CDAB);
}

#endif /* MDLA_EMU_SIMD_X86_H */
