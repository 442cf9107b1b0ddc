/*
 * simd_x86.h: AVX-512 pieces that more than one x86-64 file inlines (simd.c, gemm_rows.c).
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

#endif /* MDLA_EMU_SIMD_X86_H */
