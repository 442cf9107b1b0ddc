/* What the float32 kernels of AdaRound and calibration share (built with -ffp-contract=off).

   MDLA_CLONES: on x86-64 with GCC a function built for AVX2 and for the baseline (SSE2), the
   CPU's own picked when the library is loaded (target_clones): 8 lanes of the same separately
   rounded operations instead of 4, so the same bits on every CPU.

   mdla_add4_f32: o[j] = o[j] + x0[j] * y0[j] + x1[j] * y1[j] + x2[j] * y2[j] + x3[j] * y3[j]
   for j in [j0, j1), each product and sum rounded, added from left to right: four terms of an
   einsum-ordered sum kept in a register between one load and one store of o. */

#ifndef MDLA_QUANT_LANES_H
#define MDLA_QUANT_LANES_H

#include <stddef.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MDLA_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MDLA_CLONES
#endif

static inline __attribute__((always_inline)) void mdla_add4_f32(
    float *restrict o, const float *restrict x0, const float *restrict y0,
    const float *restrict x1, const float *restrict y1, const float *restrict x2,
    const float *restrict y2, const float *restrict x3, const float *restrict y3, size_t j0,
    size_t j1) {
    for (size_t j = j0; j < j1; j++) {
        float s = o[j];
        s = s + x0[j] * y0[j];
        s = s + x1[j] * y1[j];
        s = s + x2[j] * y2[j];
        s = s + x3[j] * y3[j];
        o[j] = s;
    }
}

#endif
