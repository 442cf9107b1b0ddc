/*
 * batch_matmul.h: BATCH_MATMUL of two int8 activations for CPU partitions, the C twin of
 * mdla_quant/kernels/batch_matmul.py, bit for bit (TFLite's int8 BatchMatMul arithmetic):
 *   acc = sum_k (lhs[b, i, k] - z_l) * (rhs[b, k, j] - z_r) in int64 (the Python side refuses
 *   an acc outside int32); out = clamp(MBQM(acc, M, s) + z_out, -128, 127), (M, s) from
 *   d = (double)(s_l * s_r) / (double)s_out, the manifest's rounding, nothing wraps.
 * lhs is [bl, m, k] (or [bl, k, m] with adj_x), rhs [br, k, n] (or [br, n, k] with adj_y),
 * y [b, m, n]; a side's batch is b or 1 (broadcast).
 */
#ifndef MDLA_CPU_BATCH_MATMUL_H
#define MDLA_CPU_BATCH_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t batch, bl, br, m, k, n;
    bool adj_x, adj_y;
    int32_t z_l, z_r, z_out;
    int64_t mult;
    int shift, rounding;
} mdla_cpu_matmul;

void mdla_cpu_batch_matmul(const mdla_cpu_matmul *p, const int8_t *lhs, const int8_t *rhs,
                           int8_t *y);

#endif /* MDLA_CPU_BATCH_MATMUL_H */
