/* A depthwise layer's AdaRound forward and gradient straight from its padded maps
   (mdla_quant.patch_rows.TapMap), for the columns [o0, o1) of C: the same float32 sums as
   numpy's einsum on the gathered taps, without gathering them (built with -ffp-contract=off).

   forward  y[m, o] = sum_k map[ix[rows[m], k], o] * w[k, o]      einsum("mko,ko->mo")
   gradient g[k, o] = sum_m map[ix[rows[m], k], o] * dy[m, o]     einsum("mko,mo->ko")

   einsum's order, kept: each output starts at +0.0 and adds one product a * b (rounded, then
   the sum rounded) per term, the terms in ascending k (forward) or m (gradient); its inner
   loop runs along o, which every operand holds contiguously. Four terms of an output (four
   taps forward, four rows for the gradient) are added in a register between one load and one
   store of it: the same additions in the same order, a quarter of the output's traffic.

   On x86-64 both are built for AVX2 and for the baseline (SSE2), the CPU's own picked when the
   library is loaded (GCC's target_clones): 8 lanes of the same separately rounded products and
   sums instead of 4 (-ffp-contract=off: no FMA), so the same bits on every CPU. */

#include <stddef.h>
#include <stdint.h>

#include "lanes.h"

MDLA_CLONES
void mdla_taps_forward_f32(const float *map, size_t c, const int64_t *ix, size_t k,
                           const int64_t *rows, size_t m, const float *w, size_t o0,
                           size_t o1, float *y) {
    for (size_t i = 0; i < m; i++) {
        const int64_t *taps = ix + (size_t)rows[i] * k;
        float *restrict out = y + i * c;
        for (size_t o = o0; o < o1; o++) out[o] = 0.0f;
        size_t t = 0;
        for (; t + 4 <= k; t += 4) { /* four terms in a register between a load and a store */
            const float *restrict x0 = map + (size_t)taps[t] * c;
            const float *restrict x1 = map + (size_t)taps[t + 1] * c;
            const float *restrict x2 = map + (size_t)taps[t + 2] * c;
            const float *restrict x3 = map + (size_t)taps[t + 3] * c;
            const float *restrict w0 = w + t * c;
            mdla_add4_f32(out, x0, w0, x1, w0 + c, x2, w0 + 2 * c, x3, w0 + 3 * c, o0, o1);
        }
        for (; t < k; t++) {
            const float *restrict x = map + (size_t)taps[t] * c;
            const float *restrict wt = w + t * c;
            for (size_t o = o0; o < o1; o++) out[o] = out[o] + x[o] * wt[o];
        }
    }
}

MDLA_CLONES
void mdla_taps_grad_f32(const float *map, size_t c, const int64_t *ix, size_t k,
                        const int64_t *rows, size_t m, const float *dy, size_t o0, size_t o1,
                        float *g) {
    for (size_t t = 0; t < k; t++)
        for (size_t o = o0; o < o1; o++) g[t * c + o] = 0.0f;
    size_t i = 0;
    for (; i + 4 <= m; i += 4) { /* four rows' terms in a register between a load and a store */
        const int64_t *t0 = ix + (size_t)rows[i] * k, *t1 = ix + (size_t)rows[i + 1] * k;
        const int64_t *t2 = ix + (size_t)rows[i + 2] * k, *t3 = ix + (size_t)rows[i + 3] * k;
        const float *restrict d0 = dy + i * c, *restrict d1 = d0 + c;
        const float *restrict d2 = d1 + c, *restrict d3 = d2 + c;
        for (size_t t = 0; t < k; t++) {
            const float *restrict x0 = map + (size_t)t0[t] * c;
            const float *restrict x1 = map + (size_t)t1[t] * c;
            const float *restrict x2 = map + (size_t)t2[t] * c;
            const float *restrict x3 = map + (size_t)t3[t] * c;
            mdla_add4_f32(g + t * c, x0, d0, x1, d1, x2, d2, x3, d3, o0, o1);
        }
    }
    for (; i < m; i++) {
        const int64_t *taps = ix + (size_t)rows[i] * k;
        const float *restrict d = dy + i * c;
        for (size_t t = 0; t < k; t++) {
            const float *restrict x = map + (size_t)taps[t] * c;
            float *restrict out = g + t * c;
            for (size_t o = o0; o < o1; o++) out[o] = out[o] + x[o] * d[o];
        }
    }
}
