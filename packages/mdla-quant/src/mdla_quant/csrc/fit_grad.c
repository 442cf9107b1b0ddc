/* A per-layer AdaRound step's loss gradient at the layer's output (mdla_quant.adaround._fit),
   in one pass of C over the GEMM's result, instead of numpy's dozen passes and temporaries:

       pre = a + bias                      (the GEMM's a (m, o), bias (o))
       y   = clip(pre, lo, hi)             (the fused activation)
       dy  = 2 * (y - target[idx]) * [lo < pre < hi] / c

   each value by the same float32 operations, with the same operands, in numpy's order (built
   with -ffp-contract=off: nothing fuses; a commuted product or sum is the same IEEE value), so
   the same bits: numpy's clip as x < lo ? lo : x, then > hi ? hi : x (a NaN and a -0.0 above lo
   stay), the mask a float 1.0 or 0.0 multiplied in (so -x * 0 is -0.0, inf * 0 a NaN, as
   numpy's product with the cast bool array). `target` (rows, o) is read at row idx[i] for
   output row i; rows [r0, r1) only, so the caller can cut them over threads; dy may be a.

   On x86-64 built for AVX2 and for the baseline, the CPU's own picked when the library is
   loaded (GCC's target_clones): the same operations, 8 lanes instead of 4. */

#include <stddef.h>
#include <stdint.h>

#include "lanes.h"

MDLA_CLONES
void mdla_fit_dy_f32(const float *a, const float *bias, const float *target, const int64_t *idx,
                     size_t o, float lo, float hi, float c, size_t r0, size_t r1, float *dy) {
    for (size_t i = r0; i < r1; i++) {
        const float *ai = a + i * o, *t = target + (size_t)idx[i] * o;
        float *d = dy + i * o;
        for (size_t j = 0; j < o; j++) {
            float p = ai[j] + bias[j];
            float inside = (float)((p > lo) & (p < hi));
            float y = p < lo ? lo : p;
            y = y > hi ? hi : y;
            float v = y - t[j];
            v = 2.0f * v;
            v = v * inside;
            d[j] = v / c;
        }
    }
}
