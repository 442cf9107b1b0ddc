/*
 * select.c: SELECT for CPU partitions (see select.h).
 */
#include "select.h"

#include <math.h>

void mdla_cpu_requantize_table(float scale, int32_t zero, float s_out, int32_t z_out,
                               int8_t table[256]) {
    for (int32_t c = -128; c < 128; c++) {
        const float scaled = (float)(c - zero) * scale;
        const float v = scaled / s_out;
        const long r = lroundf(v) + (long)z_out;
        table[c + 128] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
    }
}

static int held(float fx, float fy, int compare) {
    switch (compare) {
    case MDLA_CMP_GT: return fx > fy;
    case MDLA_CMP_GE: return fx >= fy;
    case MDLA_CMP_LT: return fx < fy;
    case MDLA_CMP_LE: return fx <= fy;
    case MDLA_CMP_EQ: return fx == fy;
    default: return fx != fy;
    }
}

void mdla_cpu_select(const int8_t *x, float sx, int32_t zx, const int8_t *yv, float sy,
                     int32_t zy, int compare, const int8_t *a, const int8_t ta[256],
                     const int8_t *b, const int8_t tb[256], size_t count, int8_t *out) {
    for (size_t i = 0; i < count; i++) {
        const float fx = (float)((int32_t)x[i] - zx) * sx;
        const float fy = (float)((int32_t)yv[i] - zy) * sy;
        out[i] = held(fx, fy, compare) ? ta[a[i] + 128] : tb[b[i] + 128];
    }
}
