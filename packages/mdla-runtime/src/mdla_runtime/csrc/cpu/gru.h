/*
 * gru.h: a float32 region of a CPU partition (issue 17): DEQUANTIZE into float32, GRU (one
 * torch.nn.GRU layer, optionally bidirectional) and FULLY_CONNECTED_F32, float32 tensors
 * between them. The C twin of mdla_quant/kernels/gru.py, bit for bit (its docstring is the
 * definition; tests/runtime/test_cpu_gru.py checks natively and on aarch64 under qemu):
 *
 *   DOT(w, v)   acc = w[0] * v[0]; acc = acc + w[i] * v[i] for i = 1..n-1   (float32)
 *   GRU         gi = DOT(W_ih[j], x_t) + b_ih[j], gh = DOT(W_hh[j], h) + b_hh[j];
 *               r = SIGMOID(gi_r + gh_r), z = SIGMOID(gi_z + gh_z),
 *               n = TANH(gi_n + r * gh_n), h = (1 - z) * n + z * h   (left to right)
 *   SIGMOID, TANH  in double from EXP, a fixed polynomial and an exact ldexp: no libm
 *               function whose last bit differs between C libraries or architectures.
 */
#ifndef MDLA_CPU_GRU_H
#define MDLA_CPU_GRU_H

#include <stddef.h>
#include <stdint.h>

/* x = s * ((float)q - (float)z) for `count` int8 values. */
void mdla_cpu_dequantize(const int8_t *q, size_t count, float scale, int32_t zero_point, float *x);

/* EXP (double), SIGMOID and TANH (float32 in and out) of gru.py's definition. */
double mdla_cpu_exp(double v);
float mdla_cpu_sigmoid(float v);
float mdla_cpu_tanh(float v);

/* The floats of GRU scratch for input size I and hidden size H: gi, gh (3H each), h (H) and
 * the weights transposed, [I, 3H] and [H, 3H] (gru.c: the 3H dot products side by side). */
size_t mdla_cpu_gru_scratch(size_t in, size_t hidden);

/* GRU over x (T, I) -> y (T, dirs * H): weights [dirs, 3H, I] and [dirs, 3H, H], biases
 * [dirs, 3H]; direction 1 reads x reversed in time and writes its states in time order. */
void mdla_cpu_gru(const float *x, size_t steps, size_t in, size_t hidden, size_t dirs,
                  const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh,
                  float *scratch, float *y);

/* FULLY_CONNECTED_F32: y[r, o] = DOT(w[o], x[r]) + b[o] over `rows` rows of `in` values. */
void mdla_cpu_fc_f32(const float *x, size_t rows, size_t in, size_t units, const float *w,
                     const float *b, float *y);

#endif /* MDLA_CPU_GRU_H */
