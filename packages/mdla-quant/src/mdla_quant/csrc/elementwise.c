/* The float interpreter's LOGISTIC and HARD_SWISH in fewer passes of C, for calibration
   (mdla_quant.native loads it; mdla_quant.fast_kernels calls it).

   Each gives every value exactly what mdla_ir.interp.elementwise gives for float32 x, by the
   same float32 operations in the same order (built with -ffp-contract=off: nothing fuses):

   LOGISTIC: e = exp(-|x|) stays numpy's own np.exp (its result is not reproducible here), so
   it takes two calls around it: mdla_neg_abs_f32 writes -|x| (the sign bit set, every other
   bit kept, as np.abs then np.negative do), then mdla_sigmoid_tail_f32 writes
   (x >= 0 ? 1 : e) / (e + 1). The interpreter's numerator e * (1 - m) + m (m = 1.0 where
   x >= 0, else 0.0) is exactly 1.0 or e (see its docstring); a NaN e is the only NaN operand
   of the sum and the first of the quotient, so it comes out with numpy's payload.

   HARD_SWISH: x * clip(x + 3, 0, 6) / 6, the clip passing a NaN through as numpy's does.
   x * t has two NaN operands only for a NaN x, where t is x's quiet NaN: either operand
   order then gives that same NaN.

   x, e and out are contiguous float32 arrays of n values; out may be e (in place). */

#include <stddef.h>

void mdla_neg_abs_f32(const float *x, size_t n, float *out) {
    for (size_t i = 0; i < n; i++) out[i] = -__builtin_fabsf(x[i]);
}

void mdla_sigmoid_tail_f32(const float *x, const float *e, size_t n, float *out) {
    for (size_t i = 0; i < n; i++) {
        float num = x[i] >= 0.0f ? 1.0f : e[i];
        float d = e[i] + 1.0f;
        out[i] = num / d;
    }
}

void mdla_hard_swish_f32(const float *x, size_t n, float *out) {
    for (size_t i = 0; i < n; i++) {
        float t = x[i] + 3.0f;
        t = t < 0.0f ? 0.0f : t; /* a NaN compares false both times: it stays */
        t = t > 6.0f ? 6.0f : t;
        float y = x[i] * t;
        out[i] = y / 6.0f;
    }
}
