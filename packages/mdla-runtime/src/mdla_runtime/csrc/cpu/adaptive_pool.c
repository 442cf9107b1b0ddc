/*
 * adaptive_pool.c: ADAPTIVE_AVG_POOL_2D for CPU partitions (see adaptive_pool.h).
 */
#include "adaptive_pool.h"

/* [start, end) of torch's bin `i` of `size` inputs into `out` outputs. */
static void bin(size_t i, size_t size, size_t out, size_t *start, size_t *end) {
    *start = (i * size) / out;
    *end = ((i + 1) * size + out - 1) / out;
}

/* The rounded mean (or with `max` the largest) of one channel's codes in a bin. */
static int8_t pool_bin(const int8_t *x, size_t w, size_t c, size_t r0, size_t r1, size_t c0,
                       size_t c1, bool max) {
    int64_t acc = max ? -128 : 0;
    for (size_t r = r0; r < r1; r++)
        for (size_t q = c0; q < c1; q++) {
            const int64_t v = x[(r * w + q) * c];
            acc = max ? (v > acc ? v : acc) : acc + v;
        }
    if (max) return (int8_t)acc;
    const int64_t count = (int64_t)((r1 - r0) * (c1 - c0));
    const int64_t avg = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
    return (int8_t)(avg < -128 ? -128 : avg > 127 ? 127 : avg);
}

void mdla_cpu_adaptive_pool(const int8_t *x, size_t n, size_t h, size_t w, size_t c, size_t oh,
                            size_t ow, bool max, int8_t *y) {
    for (size_t b = 0; b < n; b++) {
        const int8_t *xb = x + b * h * w * c;
        for (size_t i = 0; i < oh; i++) {
            size_t r0, r1;
            bin(i, h, oh, &r0, &r1);
            for (size_t j = 0; j < ow; j++) {
                size_t c0, c1;
                bin(j, w, ow, &c0, &c1);
                int8_t *out = y + ((b * oh + i) * ow + j) * c;
                for (size_t k = 0; k < c; k++)
                    out[k] = pool_bin(xb + k, w, c, r0, r1, c0, c1, max);
            }
        }
    }
}
