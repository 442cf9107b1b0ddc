/*
 * select.h: SELECT for CPU partitions, the C twin of mdla_quant/kernels/select.py: per element,
 * a where the dequantized float32 values compare true (x compare y), else b; each branch goes
 * through its 256-entry requantization table to the output's scale and zero point.
 */
#ifndef MDLA_CPU_SELECT_H
#define MDLA_CPU_SELECT_H

#include <stddef.h>
#include <stdint.h>

enum { MDLA_CMP_GT, MDLA_CMP_GE, MDLA_CMP_LT, MDLA_CMP_LE, MDLA_CMP_EQ, MDLA_CMP_NE };

/* The table of a branch at (scale, zero) requantized to (s_out, z_out): index code + 128. */
void mdla_cpu_requantize_table(float scale, int32_t zero, float s_out, int32_t z_out,
                               int8_t table[256]);

/* y[i] = cmp(x[i], y[i]) ? ta[a[i] + 128] : tb[b[i] + 128] over `count` elements. */
void mdla_cpu_select(const int8_t *x, float sx, int32_t zx, const int8_t *yv, float sy,
                     int32_t zy, int compare, const int8_t *a, const int8_t ta[256],
                     const int8_t *b, const int8_t tb[256], size_t count, int8_t *out);

#endif /* MDLA_CPU_SELECT_H */
