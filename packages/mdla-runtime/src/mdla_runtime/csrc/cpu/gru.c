/*
 * gru.c: DEQUANTIZE, GRU and FULLY_CONNECTED_F32 in the float32 order gru.h fixes (the twin of
 * mdla_quant/kernels/gru.py). One IEEE 754 operation per statement, no fused multiply-add.
 */
#include "gru.h"

#include <math.h>

/* as float_ops.c: clang contracts a * b + c unless told; GCC never does in ISO C mode */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define LOG2E 1.4426950408889634
#define LN2_HI 6.93147180369123816490e-01 /* 0x3FE62E42FEE00000: k * LN2_HI is exact */
#define LN2_LO 1.90821492927058770002e-10
#define EXP_CLAMP 110.0 /* e^-110 rounds to float32 0 */

/* 1/j! for j = 13 .. 0 (Horner order): the doubles gru.py's EXP_COEFFS holds */
static const double exp_coeffs[14] = {
    1.6059043836821613e-10, 2.08767569878681e-09, 2.505210838544172e-08, 2.755731922398589e-07,
    2.7557319223985893e-06, 2.48015873015873e-05, 0.0001984126984126984, 0.001388888888888889,
    0.008333333333333333,   0.041666666666666664, 0.16666666666666666,   0.5,
    1.0,                    1.0,
};

void mdla_cpu_dequantize(const int8_t *q, size_t count, float scale, int32_t zero_point,
                         float *x) {
    const float z = (float)zero_point;
    for (size_t i = 0; i < count; i++) {
        const float d = (float)q[i] - z;
        x[i] = scale * d;
    }
}

/* Total: NaN comes back as itself (its payload and sign, as IEEE arithmetic propagates it), before
 * k, whose conversion to int is undefined for NaN; the clamps take +-inf. */
double mdla_cpu_exp(double v) {
    if (isnan(v)) return v;
    if (v < -EXP_CLAMP) v = -EXP_CLAMP;
    if (v > EXP_CLAMP) v = EXP_CLAMP;
    const double t = v * LOG2E;
    const double k = floor(t + 0.5);
    const double hi = k * LN2_HI;
    const double lo = k * LN2_LO;
    const double r0 = v - hi;
    const double r = r0 - lo;
    double p = exp_coeffs[0];
    for (int j = 1; j < 14; j++) {
        const double pr = p * r;
        p = pr + exp_coeffs[j];
    }
    return ldexp(p, (int)k);
}

float mdla_cpu_sigmoid(float v) {
    const double e = mdla_cpu_exp(-(double)v);
    const double d = 1.0 + e;
    return (float)(1.0 / d);
}

/* tanh = -m / (2 + m) with m = e^(-2|v|) - 1, near 0 by its series (no cancellation) */
float mdla_cpu_tanh(float v) {
    const double a = fabs((double)v);
    const double u = -2.0 * a;
    double m;
    if (a < 0.17) {
        double p = exp_coeffs[0];
        for (int j = 1; j < 13; j++) {
            const double pu = p * u;
            p = pu + exp_coeffs[j];
        }
        m = p * u;
    } else {
        const double e = mdla_cpu_exp(u);
        m = e - 1.0;
    }
    const double den = 2.0 + m;
    const double t = -m / den;
    return (float)copysign(t, (double)v);
}

static float dot(const float *w, const float *v, size_t n) {
    float acc = w[0] * v[0];
    for (size_t i = 1; i < n; i++) {
        const float p = w[i] * v[i];
        acc = acc + p;
    }
    return acc;
}

size_t mdla_cpu_gru_scratch(size_t in, size_t hidden) {
    return 7 * hidden + 3 * hidden * (in + hidden);
}

/* wt = w transposed: w (rows, n) row-major -> wt (n, rows). */
static void transpose(const float *w, size_t rows, size_t n, float *restrict wt) {
    for (size_t j = 0; j < rows; j++)
        for (size_t i = 0; i < n; i++) wt[i * rows + j] = w[j * n + i];
}

/* out[j] = DOT(w[j], v) + bias[j] for the `rows` rows of w, from wt = w transposed (n, rows):
 * row j's sum is built in out[j] in DOT's order (w[j][0] v[0], then + w[j][i] v[i] for i = 1,
 * 2, ...), the rows side by side, so the compiler's vector lanes over j (SSE or AVX on x86-64,
 * NEON on aarch64) do what DOT does row by row, bit for bit. */
static void dots(const float *restrict wt, const float *restrict v, size_t n, size_t rows,
                 const float *restrict bias, float *restrict out) {
    for (size_t j = 0; j < rows; j++) out[j] = wt[j] * v[0];
    for (size_t i = 1; i < n; i++) {
        const float vi = v[i];
        const float *restrict row = wt + i * rows;
        for (size_t j = 0; j < rows; j++) {
            const float p = row[j] * vi;
            out[j] = out[j] + p;
        }
    }
    for (size_t j = 0; j < rows; j++) out[j] = out[j] + bias[j];
}

static void direction(const float *x, size_t steps, size_t in, size_t hidden, int reverse,
                      const float *w_ih, const float *w_hh, const float *b_ih,
                      const float *b_hh, float *scratch, float *y, size_t y_stride) {
    const size_t g = 3 * hidden;
    float *gi = scratch, *gh = scratch + g, *h = scratch + 2 * g;
    float *wt_ih = h + hidden, *wt_hh = wt_ih + g * in; /* 7H floats before them: g, g, H */
    transpose(w_ih, g, in, wt_ih);
    transpose(w_hh, g, hidden, wt_hh);
    for (size_t j = 0; j < hidden; j++) h[j] = 0.0f;
    for (size_t s = 0; s < steps; s++) {
        const size_t t = reverse ? steps - 1 - s : s;
        dots(wt_ih, x + t * in, in, g, b_ih, gi);
        dots(wt_hh, h, hidden, g, b_hh, gh);
        for (size_t j = 0; j < hidden; j++) {
            const float pr = gi[j] + gh[j];
            const float r = mdla_cpu_sigmoid(pr);
            const float pz = gi[hidden + j] + gh[hidden + j];
            const float z = mdla_cpu_sigmoid(pz);
            const float m = r * gh[2 * hidden + j];
            const float pn = gi[2 * hidden + j] + m;
            const float n = mdla_cpu_tanh(pn);
            const float a = 1.0f - z;
            const float b = a * n;
            const float c = z * h[j];
            h[j] = b + c; /* every gh[] of this step is read above: h may change now */
            y[t * y_stride + j] = h[j];
        }
    }
}

void mdla_cpu_gru(const float *x, size_t steps, size_t in, size_t hidden, size_t dirs,
                  const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh,
                  float *scratch, float *y) {
    const size_t g = 3 * hidden;
    for (size_t d = 0; d < dirs; d++)
        direction(x, steps, in, hidden, d == 1, w_ih + d * g * in, w_hh + d * g * hidden,
                  b_ih + d * g, b_hh + d * g, scratch, y + d * hidden, dirs * hidden);
}

void mdla_cpu_fc_f32(const float *x, size_t rows, size_t in, size_t units, const float *w,
                     const float *b, float *y) {
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < units; o++) {
            const float a = dot(w + o * in, x + r * in, in);
            y[r * units + o] = a + b[o];
        }
}
