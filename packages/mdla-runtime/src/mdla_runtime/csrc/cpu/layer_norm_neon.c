/*
 * layer_norm_neon.c: mdla_cpu_layer_norm (DEQUANTIZE -> LAYER_NORM -> QUANTIZE, float_ops.h) in
 * NEON for aarch64, the twin of layer_norm_x86.c's AVX2 kernel and the same bits as the C.
 *
 * 8 rows side by side, rows 0-3 and 4-7 in the lanes of two float32x4 per column i, each lane
 * doing its row's float32 operations in float_ops.h's order (the sums left to right over i; +,
 * -, *, / and sqrt correctly rounded in AArch64's vector lanes as in its scalar unit; no fused
 * multiply-add is written, and ISO C mode lets the compiler fuse none). 8 columns of the 8 rows
 * come in as eight 8-byte words transposed in registers (vtrn on bytes, 16-bit and 32-bit
 * lanes) and the codes go back the same way; QUANTIZE is layer_norm_x86.c's lane formula. The
 * last n % 8 columns go one at a time, the last rows % 8 rows through the portable C.
 */
#include "float_ops.h"

#ifdef MDLA_CPU_LN_NEON
#include <arm_neon.h>

enum { L = MDLA_LN_LANES };
_Static_assert(MDLA_LN_LANES == 8, "two 4-float registers per column");

/* a[k] as row k of an 8 x 8 byte block; out[c] is column c (its 8 bytes, row order). */
static inline void transpose8(const int8x8_t a[8], int8x8_t out[8]) {
    const int8x8x2_t t0 = vtrn_s8(a[0], a[1]), t1 = vtrn_s8(a[2], a[3]);
    const int8x8x2_t t2 = vtrn_s8(a[4], a[5]), t3 = vtrn_s8(a[6], a[7]);
    const int16x4x2_t u0 = vtrn_s16(vreinterpret_s16_s8(t0.val[0]), vreinterpret_s16_s8(t1.val[0]));
    const int16x4x2_t u1 = vtrn_s16(vreinterpret_s16_s8(t0.val[1]), vreinterpret_s16_s8(t1.val[1]));
    const int16x4x2_t u2 = vtrn_s16(vreinterpret_s16_s8(t2.val[0]), vreinterpret_s16_s8(t3.val[0]));
    const int16x4x2_t u3 = vtrn_s16(vreinterpret_s16_s8(t2.val[1]), vreinterpret_s16_s8(t3.val[1]));
    /* u0: columns 0 and 4 of rows 0-3 (val[0]), 2 and 6 (val[1]); u1: 1 and 5, 3 and 7;
     * u2, u3: the same of rows 4-7 */
    const int16x4_t *lo[4] = {&u0.val[0], &u1.val[0], &u0.val[1], &u1.val[1]};
    const int16x4_t *hi[4] = {&u2.val[0], &u3.val[0], &u2.val[1], &u3.val[1]};
    for (int c = 0; c < 4; c++) { /* columns c and c + 4 */
        const int32x2x2_t v = vtrn_s32(vreinterpret_s32_s16(*lo[c]), vreinterpret_s32_s16(*hi[c]));
        out[c] = vreinterpret_s8_s32(v.val[0]);
        out[c + 4] = vreinterpret_s8_s32(v.val[1]);
    }
}

/* The 8 codes dequantized, s * ((float)q - (float)z): rows 0-3 in d[0], 4-7 in d[1]. */
static inline void dequant8(int8x8_t codes, float32x4_t s, float32x4_t z, float32x4_t d[2]) {
    const int16x8_t w = vmovl_s8(codes);
    const float32x4_t q0 = vcvtq_f32_s32(vmovl_s16(vget_low_s16(w)));
    const float32x4_t q1 = vcvtq_f32_s32(vmovl_s16(vget_high_s16(w)));
    d[0] = vmulq_f32(s, vsubq_f32(q0, z));
    d[1] = vmulq_f32(s, vsubq_f32(q1, z));
}

/* QUANTIZE of 4 floats (layer_norm_x86.c's formula), as int32 codes in [-128, 127]. */
static inline int32x4_t quant4(float32x4_t y, float32x4_t s, int32x4_t z) {
    const float32x4_t q = vdivq_f32(y, s);
    const float32x4_t a = vaddq_f32(vabsq_f32(q), vdupq_n_f32(0.5f));
    const uint32x4_t small = vcltq_f32(a, vdupq_n_f32(16777216.0f)); /* NaN: false */
    const int32x4_t f = vbslq_s32(small, vcvtq_s32_f32(a), vdupq_n_s32(16777216));
    const uint32x4_t pos = vcgtq_f32(q, vdupq_n_f32(0.0f)), neg = vcltq_f32(q, vdupq_n_f32(0.0f));
    const int32x4_t r = vorrq_s32(vandq_s32(f, vreinterpretq_s32_u32(pos)),
                                  vandq_s32(vnegq_s32(f), vreinterpretq_s32_u32(neg)));
    const int32x4_t v = vaddq_s32(r, z);
    return vmaxq_s32(vminq_s32(v, vdupq_n_s32(127)), vdupq_n_s32(-128));
}

typedef struct {
    float32x4_t mean[2], inv[2], s;
    int32x4_t z;
    const float *w, *b;
} Norm;

/* Column i (t: its 8 floats) normalized and quantized to 8 codes. */
static inline int8x8_t out_column(const Norm *k, const float *t, size_t i) {
    int32x4_t c[2];
    for (int h = 0; h < 2; h++) {
        float32x4_t v = vmulq_f32(vsubq_f32(vld1q_f32(t + i * L + 4 * h), k->mean[h]), k->inv[h]);
        if (k->w) v = vmulq_f32(v, vdupq_n_f32(k->w[i]));
        if (k->b) v = vaddq_f32(v, vdupq_n_f32(k->b[i]));
        c[h] = quant4(v, k->s, k->z);
    }
    return vmovn_s16(vcombine_s16(vmovn_s32(c[0]), vmovn_s32(c[1])));
}

/* Pass 1: t[i] = column i dequantized; sum[h] the lanes' sums, left to right over i. */
static void load_block(const int8_t *x, size_t n, float32x4_t s, float32x4_t z, float *t,
                       float32x4_t sum[2]) {
    sum[0] = sum[1] = vdupq_n_f32(0.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        int8x8_t a[8], c[8];
        for (int l = 0; l < L; l++) a[l] = vld1_s8(x + (size_t)l * n + i);
        transpose8(a, c);
        for (int k = 0; k < 8; k++) {
            float32x4_t d[2];
            dequant8(c[k], s, z, d);
            for (int h = 0; h < 2; h++) {
                vst1q_f32(t + (i + (size_t)k) * L + 4 * h, d[h]);
                sum[h] = vaddq_f32(sum[h], d[h]);
            }
        }
    }
    for (; i < n; i++) {
        int8_t col[8];
        for (int l = 0; l < L; l++) col[l] = x[(size_t)l * n + i];
        float32x4_t d[2];
        dequant8(vld1_s8(col), s, z, d);
        for (int h = 0; h < 2; h++) {
            vst1q_f32(t + i * L + 4 * h, d[h]);
            sum[h] = vaddq_f32(sum[h], d[h]);
        }
    }
}

/* Pass 3: every column normalized, quantized and stored back in the rows (y: row 0's start). */
static void store_block(const Norm *k, const float *t, size_t n, int8_t *y) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        int8x8_t a[8], r[8];
        for (int c = 0; c < 8; c++) a[c] = out_column(k, t, i + (size_t)c);
        transpose8(a, r); /* column c of this block is row c of the output */
        for (int l = 0; l < L; l++) vst1_s8(y + (size_t)l * n + i, r[l]);
    }
    for (; i < n; i++) {
        int8_t c[8];
        vst1_s8(c, out_column(k, t, i));
        for (int l = 0; l < L; l++) y[(size_t)l * n + i] = c[l];
    }
}

void mdla_cpu_layer_norm_neon(const int8_t *x, size_t rows, size_t n, float s_in, int32_t z_in,
                              const float *w, const float *b, float eps, float s_out,
                              int32_t z_out, float *scratch, int8_t *y) {
    const float32x4_t si = vdupq_n_f32(s_in), zi = vdupq_n_f32((float)z_in);
    const float32x4_t nf = vdupq_n_f32((float)n);
    Norm k = {.s = vdupq_n_f32(s_out), .z = vdupq_n_s32(z_out), .w = w, .b = b};
    size_t r = 0;
    for (; r + L <= rows; r += L) {
        float32x4_t sum[2];
        load_block(x + r * n, n, si, zi, scratch, sum);
        for (int h = 0; h < 2; h++) {
            k.mean[h] = vdivq_f32(sum[h], nf);
            float32x4_t acc = vdupq_n_f32(0.0f);
            for (size_t i = 0; i < n; i++) {
                const float32x4_t d = vsubq_f32(vld1q_f32(scratch + i * L + 4 * h), k.mean[h]);
                acc = vaddq_f32(acc, vmulq_f32(d, d));
            }
            const float32x4_t var = vdivq_f32(acc, nf);
            const float32x4_t root = vsqrtq_f32(vaddq_f32(var, vdupq_n_f32(eps)));
            k.inv[h] = vdivq_f32(vdupq_n_f32(1.0f), root);
        }
        store_block(&k, scratch, n, y + r * n);
    }
    if (r < rows)
        mdla_cpu_layer_norm(x + r * n, rows - r, n, s_in, z_in, w, b, eps, s_out, z_out, scratch,
                            y + r * n);
}
#else
typedef int mdla_layer_norm_neon_unused; /* ISO C: a translation unit declares something */
#endif
