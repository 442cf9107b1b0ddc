/*
 * float_ops.c: LAYER_NORM and GELU for CPU partitions, in the float32 order float_ops.h fixes
 * (the twin of mdla_quant/kernels/float_ops.py; tests/runtime/test_cpu_float_ops.py holds the
 * two equal bit for bit, natively and on aarch64 under qemu).
 */
#include "float_ops.h"

#include <math.h>

/* a * b + c stays two roundings, no FMA, on every target: clang contracts by default unless
 * told; GCC never contracts in ISO C mode (-std=c11, which every build of these sources uses)
 * and warns about the pragma, so it is clang's alone. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* The reference: r = round_away(y / s) (emu_round_awayf) clamped to the int32 range, then
 * clamp(r + z, -128, 127). Computed here without floorf, which is a library call on x86-64
 * before SSE4.1 and keeps the loops around it scalar: with q = y / s and a = |q| + 0.5 (float32,
 * as emu_round_awayf rounds it), floorf(a) is (int32)a whenever a < 2^24 (a >= 0, so truncation
 * is the floor). Otherwise (a >= 2^24, or inf) r = +-a, and +-2^24 in its place gives the same
 * result once z (|z| <= 128) is added and the sum clamped to int8. A NaN q gives 0, as
 * emu_round_awayf's sign test does. */
int8_t mdla_cpu_quantize(float y, float scale, int32_t zero_point) {
    const float q = y / scale;
    const float a = fabsf(q) + 0.5f;
    const int32_t f = a < 16777216.0f ? (int32_t)a : 16777216;
    const int32_t r = q > 0 ? f : (q < 0 ? -f : 0);
    const int32_t v = r + zero_point;
    return (int8_t)(v < -128 ? -128 : (v > 127 ? 127 : v));
}

static float dequantize(int8_t q, float scale, int32_t zero_point) {
    return scale * ((float)q - (float)zero_point);
}

void mdla_cpu_layer_norm_f32(const float *x, size_t rows, size_t n, const float *w,
                             const float *b, float eps, float *y) {
    const float nf = (float)n;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float sum = 0.0f;
        for (size_t i = 0; i < n; i++) sum += xr[i];
        const float mean = sum / nf;
        float acc = 0.0f;
        for (size_t i = 0; i < n; i++) {
            const float d = xr[i] - mean;
            const float dd = d * d;
            acc += dd;
        }
        const float var = acc / nf;
        const float inv = 1.0f / sqrtf(var + eps);
        for (size_t i = 0; i < n; i++) {
            float v = (xr[i] - mean) * inv;
            if (w) v = v * w[i];
            if (b) v = v + b[i];
            yr[i] = v;
        }
    }
}

/* The floats of a block of MDLA_LN_LANES rows, then as many int8 codes (in floats). */
size_t mdla_cpu_layer_norm_scratch(size_t n) {
    return MDLA_LN_LANES * n + (MDLA_LN_LANES * n + sizeof(float) - 1) / sizeof(float);
}

/* LAYER_NORM of MDLA_LN_LANES rows side by side, row l of the block in lane l of `t`
 * (t[i * MDLA_LN_LANES + l] is its value i), in place. Each lane does its own row's float32
 * operations in float_ops.h's order (sums left to right over i), so the compiler's vector
 * operations across the lanes (SSE or AVX on x86-64, NEON on aarch64) compute what the loop
 * of mdla_cpu_layer_norm_f32 computes, row for row, bit for bit. */
void mdla_cpu_layer_norm_lanes(float *t, size_t n, const float *w, const float *b, float eps) {
    enum { L = MDLA_LN_LANES };
    const float nf = (float)n;
    float sum[L] = {0}, acc[L] = {0}, mean[L], inv[L];
    for (size_t i = 0; i < n; i++)
        for (int l = 0; l < L; l++) sum[l] += t[i * L + l];
    for (int l = 0; l < L; l++) mean[l] = sum[l] / nf;
    for (size_t i = 0; i < n; i++)
        for (int l = 0; l < L; l++) {
            const float d = t[i * L + l] - mean[l];
            const float dd = d * d;
            acc[l] += dd;
        }
    for (int l = 0; l < L; l++) {
        const float var = acc[l] / nf;
        inv[l] = 1.0f / sqrtf(var + eps);
    }
    for (size_t i = 0; i < n; i++) {
        const float wi = w ? w[i] : 1.0f, bi = b ? b[i] : 0.0f;
        for (int l = 0; l < L; l++) {
            float v = (t[i * L + l] - mean[l]) * inv[l];
            if (w) v = v * wi; /* the one-row loop's operations: none when w or b is NULL */
            if (b) v = v + bi;
            t[i * L + l] = v;
        }
    }
}

void mdla_cpu_layer_norm(const int8_t *x, size_t rows, size_t n, float s_in, int32_t z_in,
                         const float *w, const float *b, float eps, float s_out, int32_t z_out,
                         float *scratch, int8_t *y) {
    enum { L = MDLA_LN_LANES };
    int8_t *codes = (int8_t *)(scratch + L * n); /* the block's codes, lane-interleaved too */
    size_t r = 0;
    for (; r + L <= rows; r += L) { /* element by element: flat loops over the L * n values */
        for (int l = 0; l < L; l++)
            for (size_t i = 0; i < n; i++) codes[i * L + l] = x[(r + l) * n + i];
        for (size_t k = 0; k < L * n; k++) scratch[k] = dequantize(codes[k], s_in, z_in);
        mdla_cpu_layer_norm_lanes(scratch, n, w, b, eps);
        for (size_t k = 0; k < L * n; k++) codes[k] = mdla_cpu_quantize(scratch[k], s_out, z_out);
        for (int l = 0; l < L; l++)
            for (size_t i = 0; i < n; i++) y[(r + l) * n + i] = codes[i * L + l];
    }
    for (; r < rows; r++) { /* the last rows % L, one at a time */
        for (size_t i = 0; i < n; i++) scratch[i] = dequantize(x[r * n + i], s_in, z_in);
        mdla_cpu_layer_norm_f32(scratch, 1, n, w, b, eps, scratch);
        for (size_t i = 0; i < n; i++) y[r * n + i] = mdla_cpu_quantize(scratch[i], s_out, z_out);
    }
}

/* The sum of one group's dequantized values, and of their squared deviations from `mean` when
 * `mean` is given, in memory order (a, c, b). */
static float group_sum(const int8_t *x, const size_t shape[4], size_t c0, size_t cg, float s_in,
                       int32_t z_in, const float *mean) {
    const size_t channels = shape[2], inner = shape[3];
    float acc = 0.0f;
    for (size_t a = 0; a < shape[1]; a++)
        for (size_t c = c0; c < c0 + cg; c++)
            for (size_t j = 0; j < inner; j++) {
                const float v = dequantize(x[(a * channels + c) * inner + j], s_in, z_in);
                if (mean) {
                    const float d = v - *mean;
                    const float dd = d * d;
                    acc += dd;
                } else {
                    acc += v;
                }
            }
    return acc;
}

void mdla_cpu_group_norm(const int8_t *x, const size_t shape[4], size_t groups, float s_in,
                         int32_t z_in, const float *w, const float *b, float eps, float s_out,
                         int32_t z_out, int8_t *y) {
    const size_t channels = shape[2], inner = shape[3], cg = channels / groups;
    const size_t per = shape[1] * channels * inner;
    const float nf = (float)(shape[1] * cg * inner);
    for (size_t n = 0; n < shape[0]; n++) {
        const int8_t *xn = x + n * per;
        int8_t *yn = y + n * per;
        for (size_t g = 0; g < groups; g++) {
            const size_t c0 = g * cg;
            const float mean = group_sum(xn, shape, c0, cg, s_in, z_in, NULL) / nf;
            const float var = group_sum(xn, shape, c0, cg, s_in, z_in, &mean) / nf;
            const float inv = 1.0f / sqrtf(var + eps);
            for (size_t a = 0; a < shape[1]; a++)
                for (size_t c = c0; c < c0 + cg; c++)
                    for (size_t j = 0; j < inner; j++) {
                        const size_t k = (a * channels + c) * inner + j;
                        const float v = (dequantize(xn[k], s_in, z_in) - mean) * inv;
                        const float s = v * w[c];
                        yn[k] = mdla_cpu_quantize(s + b[c], s_out, z_out);
                    }
        }
    }
}

void mdla_cpu_gelu_table(float s_in, int32_t z_in, float s_out, int32_t z_out,
                         int8_t table[256]) {
    for (int q = -128; q < 128; q++) {
        const double x = (double)dequantize((int8_t)q, s_in, z_in);
        const double g = 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
        table[q + 128] = mdla_cpu_quantize((float)g, s_out, z_out);
    }
}
