/*
 * float_ops.h: the ops a CPU partition computes in float32 (issue 17), int8 around them:
 * DEQUANTIZE, the float32 kernel, QUANTIZE. The C twin of mdla_quant/kernels/float_ops.py,
 * bit for bit: every float32 operation below happens in the order written there, with no
 * fused multiply-add (float_ops.c sets FP_CONTRACT OFF; GCC in ISO C mode never contracts),
 * and IEEE 754 rounds +, -, *, / and sqrtf correctly, so one order gives one result.
 *
 *   DEQUANTIZE  x = s_in * ((float)q - (float)z_in)
 *   QUANTIZE    q = clamp(z + (int)round_away(y / s), -128, 127)   (emu_round_awayf, arith.h)
 *   LAYER_NORM  per row of n values: sum left to right, mean = sum / n; acc += d * d left to
 *               right with d = x - mean, var = acc / n; inv = 1 / sqrtf(var + eps);
 *               y = ((x - mean) * inv) * w + b                (w, b NULL: 1 and 0)
 *   GROUP_NORM  x as (N, A, C, B), C the channel axis split into G groups: per batch element
 *               and group, the A * C/G * B values in memory order as LAYER_NORM's row, then
 *               y = ((x - mean) * inv) * w[c] + b[c]        (mdla_quant/kernels/group_norm.py)
 *   GELU        a table over the 256 int8 inputs: y = (float)(0.5 * x * (1 + erf(x * M_SQRT1_2)))
 *               in double, erf from the C library (the reference reads the same one)
 */
#ifndef MDLA_CPU_FLOAT_OPS_H
#define MDLA_CPU_FLOAT_OPS_H

#include <stddef.h>
#include <stdint.h>

/* QUANTIZE of one float32 value. */
int8_t mdla_cpu_quantize(float y, float scale, int32_t zero_point);

/* LAYER_NORM in float32 over `rows` rows of `n` values; `w` and `b` (n floats each) may be
 * NULL; `y` may be `x` (in place). */
void mdla_cpu_layer_norm_f32(const float *x, size_t rows, size_t n, const float *w,
                             const float *b, float eps, float *y);

/* DEQUANTIZE -> LAYER_NORM -> QUANTIZE over `rows` rows of `n` int8 values (`x` and `y` hold
 * rows * n); `scratch` holds mdla_cpu_layer_norm_scratch(n) floats. MDLA_LN_LANES rows at a
 * time are normalized side by side, one row per vector lane, each in the order above: the
 * same bits as one row at a time (float_ops.c). */
#define MDLA_LN_LANES 8
size_t mdla_cpu_layer_norm_scratch(size_t n);
/* mdla_cpu_layer_norm_f32 of MDLA_LN_LANES rows of n floats, in place, lane-interleaved: value
 * i of row l at t[i * MDLA_LN_LANES + l]; the same bits as the rows one at a time. */
void mdla_cpu_layer_norm_lanes(float *t, size_t n, const float *w, const float *b, float eps);
void mdla_cpu_layer_norm(const int8_t *x, size_t rows, size_t n, float s_in, int32_t z_in,
                         const float *w, const float *b, float eps, float s_out, int32_t z_out,
                         float *scratch, int8_t *y);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* mdla_cpu_layer_norm in AVX2 intrinsics (layer_norm_x86.c): the same operations in the same
 * order, so the same bits. Only on a CPU with AVX2 (simd.h emu_isa() EMU_ISA_AVX2 or
 * EMU_ISA_AVX512). */
#define MDLA_CPU_LN_AVX2 1
void mdla_cpu_layer_norm_avx2(const int8_t *x, size_t rows, size_t n, float s_in, int32_t z_in,
                              const float *w, const float *b, float eps, float s_out,
                              int32_t z_out, float *scratch, int8_t *y);
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
/* Its NEON twin (layer_norm_neon.c): the same bits. Only at emu_isa() EMU_ISA_NEON. */
#define MDLA_CPU_LN_NEON 1
void mdla_cpu_layer_norm_neon(const int8_t *x, size_t rows, size_t n, float s_in, int32_t z_in,
                              const float *w, const float *b, float eps, float s_out,
                              int32_t z_out, float *scratch, int8_t *y);
#endif

/* DEQUANTIZE -> GROUP_NORM -> QUANTIZE of int8 `x` viewed as (batch, outer, channels, inner),
 * the channels in `groups` equal runs; `w` and `b` hold `channels` floats. */
void mdla_cpu_group_norm(const int8_t *x, const size_t shape[4], size_t groups, float s_in,
                         int32_t z_in, const float *w, const float *b, float eps, float s_out,
                         int32_t z_out, int8_t *y);

/* The 256 GELU outputs for the int8 inputs -128..127 (index q + 128). */
void mdla_cpu_gelu_table(float s_in, int32_t z_in, float s_out, int32_t z_out,
                         int8_t table[256]);

#endif /* MDLA_CPU_FLOAT_OPS_H */
