/*
 * adaptive_pool.h: ADAPTIVE_AVG_POOL_2D to any output size for CPU partitions, the C twin of
 * mdla_quant/kernels/adaptive_pool.py, bit for bit. NHWC int8; input and output share scale
 * and zero point. Output row i averages rows floor(i*H/OH) .. ceil((i+1)*H/OH) (exclusive),
 * columns alike (torch's bins); per bin acc = sum of codes, n = count,
 * out = clamp(acc > 0 ? (acc + n/2) / n : (acc - n/2) / n, -128, 127); ADAPTIVE_MAX_POOL_2D
 * takes the largest code of each bin.
 */
#ifndef MDLA_CPU_ADAPTIVE_POOL_H
#define MDLA_CPU_ADAPTIVE_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* x [n, h, w, c] -> y [n, oh, ow, c]: the bins' rounded means, or with `max` their maxima. */
void mdla_cpu_adaptive_pool(const int8_t *x, size_t n, size_t h, size_t w, size_t c, size_t oh,
                            size_t ow, bool max, int8_t *y);

#endif /* MDLA_CPU_ADAPTIVE_POOL_H */
