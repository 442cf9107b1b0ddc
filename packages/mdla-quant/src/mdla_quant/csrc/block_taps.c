/* Block reconstruction's depthwise conv on a step's pixel rows and its two gradients, in one
   pass of C each (mdla_quant.native loads it; mdla_quant.block_taps calls it).

   z (p, ld) holds the pixel rows a step's taps read; tap (m, t) each tap's row in z. Every
   function works on the channels [c0, c1) of rows ld floats apart (z, w, dd, out, g), so the
   caller can cut the channels over threads. Each value is the sum numpy's form in
   block_taps.py computes, in the same order, every product and sum rounded to float32
   (built with -ffp-contract=off): so the two give the same bits. On x86-64 each function is
   built for AVX-512, AVX2 and the baseline, the CPU's own picked when the library is loaded
   (GCC's target_clones): wider lanes of the same separately rounded float32 operations (no
   FMA: -ffp-contract=off), so the same bits on every CPU. */

#include <stddef.h>
#include <stdint.h>

#include "lanes.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define BLOCK_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define BLOCK_CLONES
#endif

/* out[i, c] = z[tap[i, 0], c] * w[0, c] + ... + z[tap[i, t-1], c] * w[t-1, c]; four terms at a
   time are added in a register between one load and one store of out (the same additions in
   the same order) */
BLOCK_CLONES
void mdla_block_dw_f32(const float *z, const int64_t *tap, size_t m, size_t t, const float *w,
                      size_t ld, size_t c0, size_t c1, float *out) {
    for (size_t i = 0; i < m; i++) {
        float *restrict o = out + i * ld;
        const int64_t *tp = tap + i * t;
        const float *restrict x = z + (size_t)tp[0] * ld;
        for (size_t c = c0; c < c1; c++) o[c] = x[c] * w[c];
        size_t k = 1;
        for (; k + 4 <= t; k += 4) {
            const float *restrict x0 = z + (size_t)tp[k] * ld;
            const float *restrict x1 = z + (size_t)tp[k + 1] * ld;
            const float *restrict x2 = z + (size_t)tp[k + 2] * ld;
            const float *restrict x3 = z + (size_t)tp[k + 3] * ld;
            const float *restrict w0 = w + k * ld;
            mdla_add4_f32(o, x0, w0, x1, w0 + ld, x2, w0 + 2 * ld, x3, w0 + 3 * ld, c0, c1);
        }
        for (; k < t; k++) {
            const float *restrict xk = z + (size_t)tp[k] * ld;
            const float *restrict wk = w + k * ld;
            for (size_t c = c0; c < c1; c++) o[c] = o[c] + xk[c] * wk[c];
        }
    }
}

/* out[k, c] = z[tap[0, k], c] * dd[0, c] + ... + z[tap[m-1, k], c] * dd[m-1, c]; four rows'
   terms at a time are added in a register between one load and one store of out */
BLOCK_CLONES
void mdla_block_dw_grad_f32(const float *z, const int64_t *tap, size_t m, size_t t,
                           const float *dd, size_t ld, size_t c0, size_t c1, float *out) {
    if (m == 0) return;
    for (size_t k = 0; k < t; k++) {
        const float *restrict x = z + (size_t)tap[k] * ld;
        float *restrict o = out + k * ld;
        for (size_t c = c0; c < c1; c++) o[c] = x[c] * dd[c];
    }
    size_t i = 1;
    for (; i + 4 <= m; i += 4) {
        const int64_t *t0 = tap + i * t, *t1 = t0 + t, *t2 = t1 + t, *t3 = t2 + t;
        const float *restrict d0 = dd + i * ld, *restrict d1 = d0 + ld;
        const float *restrict d2 = d1 + ld, *restrict d3 = d2 + ld;
        for (size_t k = 0; k < t; k++) {
            const float *restrict x0 = z + (size_t)t0[k] * ld;
            const float *restrict x1 = z + (size_t)t1[k] * ld;
            const float *restrict x2 = z + (size_t)t2[k] * ld;
            const float *restrict x3 = z + (size_t)t3[k] * ld;
            mdla_add4_f32(out + k * ld, x0, d0, x1, d1, x2, d2, x3, d3, c0, c1);
        }
    }
    for (; i < m; i++) {
        const float *restrict d = dd + i * ld;
        for (size_t k = 0; k < t; k++) {
            const float *restrict x = z + (size_t)tap[i * t + k] * ld;
            float *restrict o = out + k * ld;
            for (size_t c = c0; c < c1; c++) o[c] = o[c] + x[c] * d[c];
        }
    }
}

/* g[rows[u, k], c] += d[u, c] * w[k, c], for k in order, then u in order, on the g rows
   [0, p) zeroed first; then, with `mask` (p rows of 0/1 bytes, ld apart), each g[q, c]
   multiplied by mask[q, c] as a float (numpy's g *= mask on a bool mask) */
BLOCK_CLONES
void mdla_block_pixel_grad_f32(const int64_t *rows, size_t u, size_t t, const float *d,
                              const float *w, size_t ld, size_t c0, size_t c1, float *g,
                              size_t p, const unsigned char *mask) {
    for (size_t q = 0; q < p; q++)
        for (size_t c = c0; c < c1; c++) g[q * ld + c] = 0.0f;
    for (size_t k = 0; k < t; k++) {
        const float *restrict wk = w + k * ld;
        for (size_t i = 0; i < u; i++) {
            const float *restrict di = d + i * ld;
            float *restrict o = g + (size_t)rows[i * t + k] * ld;
            for (size_t c = c0; c < c1; c++) o[c] = o[c] + di[c] * wk[c];
        }
    }
    if (mask != NULL) {
        for (size_t q = 0; q < p; q++) {
            float *restrict o = g + q * ld;
            const unsigned char *restrict b = mask + q * ld;
            for (size_t c = c0; c < c1; c++) o[c] = o[c] * (float)b[c];
        }
    }
}

/* block_reconstruction.fused_quant on n values: the fused clip to [lo, hi], then with `grid`
   (round(v / s + z) - z) * s, and the derivative [lo < y < hi] as 0/1 bytes (`bits`) or
   floats (`deriv`), whichever is not NULL; all in float32, as numpy computes them with lo, hi,
   s and z as float32 scalars. np.round's half-to-even is (u + 1.5 * 2^23) - 1.5 * 2^23, exact
   for |u| < 2^22 (inside the grid |u| <= 128 + |z|), with u's sign for a zero, as rint gives. */
static void quant_f32(const float *y, size_t n, float lo, float hi, int grid, float s,
                      float z, float *out) {
    const float magic = 12582912.0f;
    for (size_t i = 0; i < n; i++) {
        float v = y[i];
        v = v < lo ? lo : v; /* as np.clip: NaN kept, -0.0 kept at lo = 0.0 */
        v = v > hi ? hi : v;
        if (grid) {
            float u = v / s + z;
            v = (__builtin_copysignf((u + magic) - magic, u) - z) * s;
        }
        out[i] = v;
    }
}

BLOCK_CLONES
void mdla_block_fused_quant_f32(const float *y, size_t n, float lo, float hi, int grid, float s,
                                float z, float *out, unsigned char *bits, float *deriv) {
    if (bits != NULL) {
        for (size_t i = 0; i < n; i++) bits[i] = (unsigned char)((y[i] > lo) & (y[i] < hi));
    } else {
        for (size_t i = 0; i < n; i++) deriv[i] = ((y[i] > lo) & (y[i] < hi)) ? 1.0f : 0.0f;
    }
    quant_f32(y, n, lo, hi, grid, s, z, out);
}
