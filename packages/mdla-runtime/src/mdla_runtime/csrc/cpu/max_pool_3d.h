/*
 * max_pool_3d.h: MAX_POOL_3D for CPU partitions, the C twin of mdla_quant/kernels/
 * max_pool_3d.py: NDHWC int8, windows (kt, kh, kw) at stride (st, sh, sw) over the input padded
 * by (pt, ph, pw) on both sides; the largest code among the taps inside the input.
 */
#ifndef MDLA_CPU_MAX_POOL_3D_H
#define MDLA_CPU_MAX_POOL_3D_H

#include <stddef.h>
#include <stdint.h>

/* in: n, t, h, w, c; out: ot, oh, ow; k, s, p: (t, h, w) kernel, stride, padding. */
void mdla_cpu_max_pool_3d(const int8_t *x, const size_t in[5], const size_t out[3],
                          const size_t k[3], const size_t s[3], const size_t p[3], int8_t *y);

#endif /* MDLA_CPU_MAX_POOL_3D_H */
