/* Calibration's Winograd F(4x4, 3x3) transforms for a stride-1 3x3 float32 NHWC convolution
   (mdla_quant.winograd holds the filter transform and the 36 products between these two).

   Each 4x4 block of outputs comes from a 6x6 block of the padded input d (blocks 4 apart):
       V = B^T d B        (mdla_wino43_input_f32: 36 values per block and input channel)
       M[xi] = V[xi] U[xi] over the input channels (36 matrix products, numpy's matmul)
       y = A^T M A + bias (mdla_wino43_output_f32: 16 values per block and output channel,
                           and a fused ReLU when asked)
   with U = G g G^T the filter's transform, and the interpolation points 0, +-1, +-2, inf
   (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016):
       B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0;
              0 4 0 -5 0 1]
       A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
   It is the convolution's sum in exact arithmetic, and 4 multiplies per output where the
   direct form has 9 (times the input channels); in float32 it rounds otherwise, with errors
   about 1e-6 of the outputs' magnitude (bounded in tests/quant/test_winograd.py). Both
   transforms run along the channels, which NHWC keeps contiguous: each pass is the same few
   additions on contiguous rows of channels, vectorized. */

#include <stddef.h>
#include <stdlib.h>

#include "lanes.h"

/* o = B^T applied to the six rows i (each c channels): one column of the 6x6 block. */
static inline __attribute__((always_inline)) void bt6(const float *restrict i0,
                                                      const float *restrict i1,
                                                      const float *restrict i2,
                                                      const float *restrict i3,
                                                      const float *restrict i4,
                                                      const float *restrict i5, float *restrict o0,
                                                      float *restrict o1, float *restrict o2,
                                                      float *restrict o3, float *restrict o4,
                                                      float *restrict o5, size_t c) {
    for (size_t j = 0; j < c; j++) {
        float d0 = i0[j], d1 = i1[j], d2 = i2[j], d3 = i3[j], d4 = i4[j], d5 = i5[j];
        o0[j] = (4.0f * d0 - 5.0f * d2) + d4;
        o1[j] = (d3 + d4) - 4.0f * (d1 + d2);
        o2[j] = (d4 - d3) + 4.0f * (d1 - d2);
        o3[j] = (d4 - d2) + 2.0f * (d3 - d1);
        o4[j] = (d4 - d2) - 2.0f * (d3 - d1);
        o5[j] = (4.0f * d1 - 5.0f * d3) + d5;
    }
}

/* o = A^T applied to the six rows m (each k channels). */
static inline __attribute__((always_inline)) void at6(const float *restrict m0,
                                                      const float *restrict m1,
                                                      const float *restrict m2,
                                                      const float *restrict m3,
                                                      const float *restrict m4,
                                                      const float *restrict m5, float *restrict o0,
                                                      float *restrict o1, float *restrict o2,
                                                      float *restrict o3, size_t k) {
    for (size_t j = 0; j < k; j++) {
        float a = m1[j] + m2[j], b = m1[j] - m2[j], s = m3[j] + m4[j], d = m3[j] - m4[j];
        o0[j] = (m0[j] + a) + s;
        o1[j] = b + 2.0f * d;
        o2[j] = a + 4.0f * s;
        o3[j] = (b + 8.0f * d) + m5[j];
    }
}

/* G of F(4x4, 3x3): the filter's transform U = G g G^T. */
static const double G[6][3] = {
    {1.0 / 4, 0, 0},
    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6},
    {1.0 / 24, -1.0 / 12, 1.0 / 6},
    {0, 0, 1},
};

/* w: (k, 3, 3, c) filters; u: (36, c, k), u[6a + b][ch][o] = (G g G^T)[a][b] of the filter
   g = w[o, :, :, ch], in double and rounded once to float. */
void mdla_wino43_filter_f32(const float *w, size_t k, size_t c, float *u) {
    for (size_t ch = 0; ch < c; ch++) {
        for (size_t o = 0; o < k; o++) {
            double g[3][3], t[6][3];
            for (size_t i = 0; i < 3; i++) {
                for (size_t j = 0; j < 3; j++) g[i][j] = (double)w[((o * 3 + i) * 3 + j) * c + ch];
            }
            for (size_t a = 0; a < 6; a++) {
                for (size_t j = 0; j < 3; j++) {
                    t[a][j] = G[a][0] * g[0][j] + G[a][1] * g[1][j] + G[a][2] * g[2][j];
                }
            }
            for (size_t a = 0; a < 6; a++) {
                for (size_t b = 0; b < 6; b++) {
                    double v = t[a][0] * G[b][0] + t[a][1] * G[b][1] + t[a][2] * G[b][2];
                    u[((a * 6 + b) * c + ch) * k + o] = (float)v;
                }
            }
        }
    }
}

/* xp: (n, hp, wp, c), hp >= 4 th + 2, wp >= 4 tw + 2 (the padded input); v: (36, n th tw, c).
   Returns 0, or -2 when out of memory. */
MDLA_CLONES
int mdla_wino43_input_f32(const float *xp, size_t n, size_t hp, size_t wp, size_t c, size_t th,
                          size_t tw, float *v) {
    float *t = malloc(36 * c * sizeof *t);
    if (t == NULL) return -2;
    size_t tiles = n * th * tw, tile = 0;
    for (size_t b = 0; b < n; b++) {
        for (size_t ti = 0; ti < th; ti++) {
            for (size_t tj = 0; tj < tw; tj++, tile++) {
                const float *d = xp + ((b * hp + 4 * ti) * wp + 4 * tj) * c;
                size_t row = wp * c;
                for (size_t s = 0; s < 6; s++) { /* columns: t[r][s] = (B^T d)[r][s] */
                    const float *x = d + s * c;
                    float *o = t + s * c;
                    bt6(x, x + row, x + 2 * row, x + 3 * row, x + 4 * row, x + 5 * row, o,
                        o + 6 * c, o + 12 * c, o + 18 * c, o + 24 * c, o + 30 * c, c);
                }
                for (size_t r = 0; r < 6; r++) { /* rows: v[r][s] = (t B)[r][s] */
                    const float *x = t + r * 6 * c;
                    float *o = v + (r * 6 * tiles + tile) * c;
                    size_t step = tiles * c;
                    bt6(x, x + c, x + 2 * c, x + 3 * c, x + 4 * c, x + 5 * c, o, o + step,
                        o + 2 * step, o + 3 * step, o + 4 * step, o + 5 * step, c);
                }
            }
        }
    }
    free(t);
    return 0;
}

/* numpy's np.maximum(v, 0): v above zero, a NaN itself, anything else +0 (-0 too). */
static inline __attribute__((always_inline)) float relu(float v) {
    float r = v > 0.0f ? v : 0.0f;
    return v != v ? v : r;
}

/* m: (36, n th tw, k) (the products); bias: k values or NULL; y: (n, oh, ow, k), each output
   block's rows and columns inside oh x ow written; with `fuse_relu` the ReLU applied as each
   output is written (np.maximum(y, 0)'s values, without another pass over y). Returns 0, or -2
   when out of memory. */
MDLA_CLONES
int mdla_wino43_output_f32(const float *m, size_t n, size_t th, size_t tw, size_t k,
                           const float *bias, size_t oh, size_t ow, float *y, int fuse_relu) {
    float *u = malloc((24 + 16) * k * sizeof *u);
    if (u == NULL) return -2;
    float *o = u + 24 * k;
    size_t tiles = n * th * tw, tile = 0, step = tiles * k;
    for (size_t b = 0; b < n; b++) {
        for (size_t ti = 0; ti < th; ti++) {
            for (size_t tj = 0; tj < tw; tj++, tile++) {
                for (size_t s = 0; s < 6; s++) { /* columns: u[r][s] = (A^T M)[r][s] */
                    const float *x = m + (s * tiles + tile) * k;
                    float *w = u + s * k;
                    at6(x, x + 6 * step, x + 12 * step, x + 18 * step, x + 24 * step,
                        x + 30 * step, w, w + 6 * k, w + 12 * k, w + 18 * k, k);
                }
                for (size_t r = 0; r < 4; r++) { /* rows: o[r][s] = (u A)[r][s] */
                    const float *x = u + r * 6 * k;
                    float *w = o + r * 4 * k;
                    at6(x, x + k, x + 2 * k, x + 3 * k, x + 4 * k, x + 5 * k, w, w + k,
                        w + 2 * k, w + 3 * k, k);
                }
                for (size_t r = 0; r < 4 && 4 * ti + r < oh; r++) {
                    for (size_t s = 0; s < 4 && 4 * tj + s < ow; s++) {
                        float *dst = y + ((b * oh + 4 * ti + r) * ow + 4 * tj + s) * k;
                        const float *src = o + (r * 4 + s) * k;
                        if (bias != NULL && fuse_relu) {
                            for (size_t j = 0; j < k; j++) dst[j] = relu(src[j] + bias[j]);
                        } else if (bias != NULL) {
                            for (size_t j = 0; j < k; j++) dst[j] = src[j] + bias[j];
                        } else if (fuse_relu) {
                            for (size_t j = 0; j < k; j++) dst[j] = relu(src[j]);
                        } else {
                            for (size_t j = 0; j < k; j++) dst[j] = src[j];
                        }
                    }
                }
            }
        }
    }
    free(u);
    return 0;
}
