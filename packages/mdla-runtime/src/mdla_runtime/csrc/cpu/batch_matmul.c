/*
 * batch_matmul.c: BATCH_MATMUL for CPU partitions (see batch_matmul.h).
 */
#include "batch_matmul.h"

#include "arith.h"

void mdla_cpu_batch_matmul(const mdla_cpu_matmul *p, const int8_t *lhs, const int8_t *rhs,
                           int8_t *y) {
    const size_t m = p->m, k = p->k, n = p->n;
    for (size_t b = 0; b < p->batch; b++) {
        const int8_t *a = lhs + (p->bl == 1 ? 0 : b) * m * k;
        const int8_t *c = rhs + (p->br == 1 ? 0 : b) * k * n;
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j < n; j++) {
                int64_t acc = 0;
                for (size_t t = 0; t < k; t++) {
                    const int64_t av = p->adj_x ? a[t * m + i] : a[i * k + t];
                    const int64_t cv = p->adj_y ? c[j * k + t] : c[t * n + j];
                    acc += (av - p->z_l) * (cv - p->z_r);
                }
                const int64_t v = emu_mbqm_acc(acc, p->mult, p->shift, p->rounding, false);
                y[(b * m + i) * n + j] = (int8_t)emu_clamp(emu_add_offset(v, p->z_out, false),
                                                           -128, 127);
            }
        }
    }
}
