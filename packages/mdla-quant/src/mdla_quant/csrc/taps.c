/* A depthwise layer's AdaRound forward and gradient straight from its padded maps
   (mdla_quant.patch_rows.TapMap), for the columns [o0, o1) of C: the same float32 sums as
   numpy's einsum on the gathered taps, without gathering them (built with -ffp-contract=off).

   forward  y[m, o] = sum_k map[ix[rows[m], k], o] * w[k, o]      einsum("mko,ko->mo")
   gradient g[k, o] = sum_m map[ix[rows[m], k], o] * dy[m, o]     einsum("mko,mo->ko")

   einsum's order, kept: each output starts at +0.0 and adds one product a * b (rounded, then
   the sum rounded) per term, the terms in ascending k (forward) or m (gradient); its inner
   loop runs along o, which every operand holds contiguously. */

#include <stddef.h>
#include <stdint.h>

void mdla_taps_forward_f32(const float *map, size_t c, const int64_t *ix, size_t k,
                           const int64_t *rows, size_t m, const float *w, size_t o0,
                           size_t o1, float *y) {
    for (size_t i = 0; i < m; i++) {
        const int64_t *taps = ix + (size_t)rows[i] * k;
        float *restrict out = y + i * c;
        for (size_t o = o0; o < o1; o++) out[o] = 0.0f;
        for (size_t t = 0; t < k; t++) {
            const float *restrict x = map + (size_t)taps[t] * c;
            const float *restrict wt = w + t * c;
            for (size_t o = o0; o < o1; o++) out[o] = out[o] + x[o] * wt[o];
        }
    }
}

void mdla_taps_grad_f32(const float *map, size_t c, const int64_t *ix, size_t k,
                        const int64_t *rows, size_t m, const float *dy, size_t o0, size_t o1,
                        float *g) {
    for (size_t t = 0; t < k; t++)
        for (size_t o = o0; o < o1; o++) g[t * c + o] = 0.0f;
    for (size_t i = 0; i < m; i++) {
        const int64_t *taps = ix + (size_t)rows[i] * k;
        const float *restrict d = dy + i * c;
        for (size_t t = 0; t < k; t++) {
            const float *restrict x = map + (size_t)taps[t] * c;
            float *restrict out = g + t * c;
            for (size_t o = o0; o < o1; o++) out[o] = out[o] + x[o] * d[o];
        }
    }
}
