/* The float interpreter's DEPTHWISE_CONV_2D in one pass of C, for calibration
   (mdla_quant.native loads it; mdla_quant.fast_kernels calls it).

   mdla_dw_f32 gives every output value exactly what mdla_ir.interp.conv.depthwise_nhwc gives
   for float32 operands: 0.0f + p_00 + p_01 + ... + p_(kh-1)(kw-1), the taps in row-major
   order, each product x * w rounded to float32 and each sum rounded to float32 in that order,
   then + bias (when given). Built with -ffp-contract=off, so no multiply and add fuse; the
   loop over channels only runs the same per-value sequence on several values at once.

   xp is the padded input (n, hp, wp, c), channels already repeated for a multiplier; w is
   (kh, kw, c); out is (n, oh, ow, c); all contiguous float32. The caller checks the shapes
   (oh, ow from hp, wp, the kernel, stride and dilation), so every read is inside xp.

   On x86-64 built for AVX2 and for the baseline (SSE2), the CPU's own picked when the library
   is loaded (GCC's target_clones): the same separately rounded operations, 8 lanes instead of 4.
   */

#include <stddef.h>

#include "lanes.h"

static inline __attribute__((always_inline)) void pixel(const float *restrict xp, size_t wp, size_t c, const float *restrict w,
                  size_t kh, size_t kw, size_t dh, size_t dw, const float *restrict bias,
                  float *restrict o) {
    for (size_t k = 0; k < c; k++) o[k] = 0.0f;
    for (size_t i = 0; i < kh; i++) {
        for (size_t j = 0; j < kw; j++) {
            const float *restrict x = xp + (i * dh * wp + j * dw) * c;
            const float *restrict wt = w + (i * kw + j) * c;
            for (size_t k = 0; k < c; k++) o[k] = o[k] + x[k] * wt[k];
        }
    }
    if (bias != NULL) {
        for (size_t k = 0; k < c; k++) o[k] = o[k] + bias[k];
    }
}

MDLA_CLONES
void mdla_dw_f32(const float *xp, size_t n, size_t hp, size_t wp, size_t c, const float *w,
                 size_t kh, size_t kw, size_t sh, size_t sw, size_t dh, size_t dw,
                 const float *bias, float *out, size_t oh, size_t ow) {
    for (size_t b = 0; b < n; b++) {
        for (size_t y = 0; y < oh; y++) {
            for (size_t x = 0; x < ow; x++) {
                const float *at = xp + ((b * hp + y * sh) * wp + x * sw) * c;
                float *o = out + ((b * oh + y) * ow + x) * c;
                pixel(at, wp, c, w, kh, kw, dh, dw, bias, o);
            }
        }
    }
}
