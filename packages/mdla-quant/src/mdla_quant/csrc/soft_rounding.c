/* SoftRounding's element-wise passes (mdla_quant.soft_rounding) in C, for a block of `rows`
   contiguous rows of `cols` float32 values: each value is exactly what the numpy form gives,
   by the same float32 operations with the same operands in the same order (built with
   -ffp-contract=off: nothing fuses; a commuted product or sum is the same IEEE value).

   exp and power stay numpy's (their results are not reproducible here): the caller runs
   np.exp between its passes of the soft weight, and the regularizer's power between the two
   passes of the step. Every constant (zeta - gamma, lam * beta, Adam's bias corrections ...)
   comes in already rounded to float32, as numpy rounds a Python scalar against a float32 array.

   numpy's semantics kept exactly:
     clip(x, lo, hi)   x < lo ? lo : x, then > hi ? hi : x: a NaN and a -0.0 above lo stay
     sign(u)           u > 0 ? 1 : u < 0 ? -1 : u == 0 ? +0 : u (a NaN stays)
     abs(u)            the sign bit cleared
     x * bool          x * 1.0f or x * 0.0f (so -x * 0 is -0.0 and inf * 0 a NaN, as numpy)
   A NaN's payload is the only thing that can differ (which NaN operand a SIMD loop returns).

   The scale of element (i, j) is scale[i * srs + j * scs] (strides in elements, scs 0 or 1: 0
   broadcasts), the gradient's g[i * grs + j * gcs]. Every loop is branch-free (masks and
   selects), so the compiler vectorizes it; a strided gradient row is first copied into dh.

   On x86-64 each entry point is built for AVX2 and for the baseline (SSE2), the CPU's own
   picked when the library is loaded (GCC's target_clones): the same separately rounded
   float32 operations, 8 lanes instead of 4 (-ffp-contract=off: no FMA; sqrtf and the division
   are IEEE's correctly rounded ones in either width), so the same bits on every CPU. */

#include <math.h>
#include <stddef.h>

#include "lanes.h"

static inline float clipf(float x, float lo, float hi) {
    float y = x < lo ? lo : x;
    return y > hi ? hi : y;
}

/* numpy's sign: +-1, +0 for either zero, a NaN kept. */
static inline float signf(float u) {
    float s = (float)(u > 0.0f) - (float)(u < 0.0f);
    return u != u ? u : s;
}

/* One row of the soft weight; `scs` a literal at each call, so each case vectorizes. */
static inline __attribute__((always_inline)) void soft_row(
    const float *restrict e, const float *restrict base, const float *restrict sc,
    ptrdiff_t scs, size_t cols, float zg, float gamma, float *restrict sig, float *restrict h,
    float *restrict bh, float *restrict w) {
    for (size_t j = 0; j < cols; j++) {
        float t = e[j] + 1.0f;
        float s = 1.0f / t;
        float hh = s * zg;
        hh = clipf(hh + gamma, 0.0f, 1.0f);
        float b = base[j] + hh;
        sig[j] = s;
        h[j] = hh;
        bh[j] = b;
        w[j] = clipf(b, -127.0f, 127.0f) * sc[(ptrdiff_t)j * scs];
    }
}

/* e = exp(-V) (numpy's) in; sigmoid(V), h, b + h and the soft weight w~ out. */
MDLA_CLONES
void mdla_sr_soft_f32(const float *e, const float *base, const float *scale, ptrdiff_t srs,
                      ptrdiff_t scs, size_t rows, size_t cols, float zg, float gamma,
                      float *sig, float *h, float *bh, float *w) {
    for (size_t i = 0; i < rows; i++) {
        size_t k = i * cols;
        const float *sc = scale + (ptrdiff_t)i * srs;
        if (scs == 0)
            soft_row(e + k, base + k, sc, 0, cols, zg, gamma, sig + k, h + k, bh + k, w + k);
        else
            soft_row(e + k, base + k, sc, 1, cols, zg, gamma, sig + k, h + k, bh + k, w + k);
    }
}

/* One row of the step's first pass, the gradient contiguous (`g` may be `dh` itself). */
static inline __attribute__((always_inline)) void front_row(
    const float *g, const float *restrict sc, ptrdiff_t scs, const float *restrict bh,
    const float *restrict h, size_t cols, int reg, float *dh, float *restrict u,
    float *restrict sgn) {
    for (size_t j = 0; j < cols; j++) {
        float d = g[j] * sc[(ptrdiff_t)j * scs];
        dh[j] = d * (float)((bh[j] > -127.0f) & (bh[j] < 127.0f));
    }
    if (!reg) return;
    for (size_t j = 0; j < cols; j++) {
        float v = h[j] * 2.0f;
        v = v - 1.0f;
        sgn[j] = signf(v);
        u[j] = fabsf(v);
    }
}

/* The step's first pass: dh = dL/dw~ * s * [-127 < b + h < 127]; with `reg`, also
   u = |2h - 1| and its sign, for numpy's power of u between the passes. */
MDLA_CLONES
void mdla_sr_front_f32(const float *g, ptrdiff_t grs, ptrdiff_t gcs, const float *scale,
                       ptrdiff_t srs, ptrdiff_t scs, const float *bh, const float *h,
                       size_t rows, size_t cols, int reg, float *dh, float *u, float *sgn) {
    if (gcs != 1) { /* gathered into dh first, then read from there in place: eight rows at a
                       time, so a transposed gradient (grs 1) is read in runs of eight */
        for (size_t i0 = 0; i0 < rows; i0 += 8) {
            size_t n = rows - i0 < 8 ? rows - i0 : 8;
            const float *gr = g + (ptrdiff_t)i0 * grs;
            for (size_t j = 0; j < cols; j++)
                for (size_t r = 0; r < n; r++)
                    dh[(i0 + r) * cols + j] = gr[(ptrdiff_t)r * grs + (ptrdiff_t)j * gcs];
        }
    }
    for (size_t i = 0; i < rows; i++) {
        size_t k = i * cols;
        const float *sc = scale + (ptrdiff_t)i * srs;
        const float *gr = gcs != 1 ? dh + k : g + (ptrdiff_t)i * grs;
        if (scs == 0)
            front_row(gr, sc, 0, bh + k, h + k, cols, reg, dh + k, u + k, sgn + k);
        else
            front_row(gr, sc, 1, bh + k, h + k, cols, reg, dh + k, u + k, sgn + k);
    }
}

/* The constants of the second pass, each a float32 as numpy rounds them. */
typedef struct {
    float lb;    /* lam * beta */
    float n;     /* the tensor's element count */
    float zg;    /* zeta - gamma */
    float b1, c1, b2, c2; /* 0.9, 0.1, 0.999, 0.001 */
    float bc1, bc2;       /* 1 - 0.9^t, 1 - 0.999^t */
    float lr, eps;        /* 1e-2, 1e-8 */
    int reg;     /* the regularizer acts: u holds numpy's |2h - 1| ** (beta - 1) */
    int late_lr; /* lr * (m^ / (sqrt(s2^) + eps)) instead of (lr * m^) / (...) */
} mdla_sr_consts;

/* dh -= lam * beta * u * sign(2h - 1) * 2 / n, u numpy's power. */
static inline __attribute__((always_inline)) void regularize(const mdla_sr_consts *c, const float *restrict u,
                       const float *restrict sgn, size_t n, float *restrict dh) {
    const float lb = c->lb, count = c->n;
    for (size_t k = 0; k < n; k++) {
        float r = u[k] * lb;
        r = r * sgn[k];
        r = r * 2.0f;
        r = r / count;
        dh[k] = dh[k] - r;
    }
}

/* The sigmoid's chain rule, Adam's moments and V's update, in place; `late` a literal. */
static inline __attribute__((always_inline)) void adam(
    const mdla_sr_consts *c, int late, const float *restrict sig, const float *restrict h,
    size_t n, float *restrict dh, float *restrict m, float *restrict s2, float *restrict v) {
    const float zg = c->zg, b1 = c->b1, c1 = c->c1, b2 = c->b2, c2 = c->c2;
    const float bc1 = c->bc1, bc2 = c->bc2, lr = c->lr, eps = c->eps;
    for (size_t k = 0; k < n; k++) {
        float d = dh[k] * zg;
        d = d * sig[k];
        d = d * (1.0f - sig[k]);
        d = d * (float)((h[k] > 0.0f) & (h[k] < 1.0f));
        float mk = m[k] * b1;
        mk = mk + d * c1;
        float a = d * c2;
        a = a * d;
        float sk = s2[k] * b2;
        sk = sk + a;
        a = mk / bc1;
        if (!late) a = a * lr;
        float b = sk / bc2;
        b = sqrtf(b);
        b = b + eps;
        a = a / b;
        if (late) a = a * lr;
        dh[k] = d;
        m[k] = mk;
        s2[k] = sk;
        v[k] = v[k] - a;
    }
}

/* The step's second pass: the regularizer's term, then `adam`. */
MDLA_CLONES
void mdla_sr_back_f32(const mdla_sr_consts *c, const float *u, const float *sgn,
                      const float *sig, const float *h, size_t n, float *dh, float *m,
                      float *s2, float *v) {
    if (c->reg) regularize(c, u, sgn, n, dh);
    if (c->late_lr)
        adam(c, 1, sig, h, n, dh, m, s2, v);
    else
        adam(c, 0, sig, h, n, dh, m, s2, v);
}
