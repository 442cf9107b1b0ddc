/*
 * max_pool_3d.c: MAX_POOL_3D for CPU partitions (see max_pool_3d.h).
 */
#include "max_pool_3d.h"

/* The largest code of channel 0 of `x` (stride c between pixels) in one window. */
static int8_t window_max(const int8_t *x, const size_t in[5], const long start[3],
                         const size_t k[3]) {
    int best = -129;
    for (size_t a = 0; a < k[0]; a++)
        for (size_t b = 0; b < k[1]; b++)
            for (size_t d = 0; d < k[2]; d++) {
                const long t = start[0] + (long)a, h = start[1] + (long)b, w = start[2] + (long)d;
                if (t < 0 || h < 0 || w < 0 || t >= (long)in[1] || h >= (long)in[2] ||
                    w >= (long)in[3])
                    continue;
                const int v = x[(((size_t)t * in[2] + (size_t)h) * in[3] + (size_t)w) * in[4]];
                if (v > best) best = v;
            }
    return (int8_t)best;
}

void mdla_cpu_max_pool_3d(const int8_t *x, const size_t in[5], const size_t out[3],
                          const size_t k[3], const size_t s[3], const size_t p[3], int8_t *y) {
    const size_t frame = in[1] * in[2] * in[3] * in[4];
    for (size_t n = 0; n < in[0]; n++)
        for (size_t i = 0; i < out[0]; i++)
            for (size_t j = 0; j < out[1]; j++)
                for (size_t l = 0; l < out[2]; l++) {
                    const long start[3] = {(long)(i * s[0]) - (long)p[0],
                                           (long)(j * s[1]) - (long)p[1],
                                           (long)(l * s[2]) - (long)p[2]};
                    int8_t *o = y + (((n * out[0] + i) * out[1] + j) * out[2] + l) * in[4];
                    for (size_t c = 0; c < in[4]; c++)
                        o[c] = window_max(x + n * frame + c, in, start, k);
                }
}
