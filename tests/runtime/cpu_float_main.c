/* A test driver of csrc/cpu/float_ops.c for builds Python cannot load (aarch64 under qemu):
 * reads records from argv[1], writes each record's int8 result to argv[2], in order.
 *   0 (LAYER_NORM): u32 rows, u32 n, f32 s_in, i32 z_in, f32 s_out, i32 z_out, f32 eps,
 *                   u32 has_w, u32 has_b, [n f32 w], [n f32 b], rows * n int8 -> rows * n int8
 *   1 (GELU table): f32 s_in, i32 z_in, f32 s_out, i32 z_out -> 256 int8
 *   2 (LAYER_NORM in float32): u32 rows, u32 n, f32 eps, u32 has_w, u32 has_b, [n f32 w],
 *                   [n f32 b], rows * n f32 -> rows * n f32
 *   3 (as 2, MDLA_LN_LANES rows side by side: mdla_cpu_layer_norm_lanes): rows is
 *                   MDLA_LN_LANES
 * With MDLA_LN_AVX2=1 in the environment, LAYER_NORM (0) runs mdla_cpu_layer_norm_avx2 (x86-64
 * only), with MDLA_LN_NEON=1 mdla_cpu_layer_norm_neon (aarch64 only); elsewhere the driver
 * exits 2.
 * Little-endian, packed; exit 1 on a short or malformed file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_ops.h"

static int get(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

static int use_avx2, use_neon;

static void layer_norm(const int8_t *x, size_t rows, size_t n, float s_in, int32_t z_in,
                       const float *w, const float *b, float eps, float s_out, int32_t z_out,
                       float *scratch, int8_t *y) {
#ifdef MDLA_CPU_LN_AVX2
    if (use_avx2) {
        mdla_cpu_layer_norm_avx2(x, rows, n, s_in, z_in, w, b, eps, s_out, z_out, scratch, y);
        return;
    }
#endif
#ifdef MDLA_CPU_LN_NEON
    if (use_neon) {
        mdla_cpu_layer_norm_neon(x, rows, n, s_in, z_in, w, b, eps, s_out, z_out, scratch, y);
        return;
    }
#endif
    mdla_cpu_layer_norm(x, rows, n, s_in, z_in, w, b, eps, s_out, z_out, scratch, y);
}

/* The rows of x through mdla_cpu_layer_norm_lanes, interleaved there and back. */
static int lanes(float *x, uint32_t rows, uint32_t n, const float *w, const float *b, float eps) {
    const size_t l = MDLA_LN_LANES;
    float *t = malloc(4 * l * n);
    if (rows != l || !t) return 0;
    for (size_t r = 0; r < l; r++)
        for (size_t i = 0; i < n; i++) t[i * l + r] = x[r * n + i];
    mdla_cpu_layer_norm_lanes(t, n, w, b, eps);
    for (size_t r = 0; r < l; r++)
        for (size_t i = 0; i < n; i++) x[r * n + i] = t[i * l + r];
    free(t);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    const char *avx2 = getenv("MDLA_LN_AVX2");
    use_avx2 = avx2 != NULL && strcmp(avx2, "1") == 0;
    const char *neon = getenv("MDLA_LN_NEON");
    use_neon = neon != NULL && strcmp(neon, "1") == 0;
#ifndef MDLA_CPU_LN_AVX2
    if (use_avx2) return 2;
#endif
#ifndef MDLA_CPU_LN_NEON
    if (use_neon) return 2;
#endif
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    if (!in || !out) return 1;
    int32_t op;
    while (get(in, &op, 4)) {
        if (op == 1) {
            float s_in, s_out;
            int32_t z_in, z_out;
            int8_t table[256];
            if (!get(in, &s_in, 4) || !get(in, &z_in, 4) || !get(in, &s_out, 4) ||
                !get(in, &z_out, 4))
                return 1;
            mdla_cpu_gelu_table(s_in, z_in, s_out, z_out, table);
            fwrite(table, 1, 256, out);
            continue;
        }
        if (op == 2 || op == 3) {
            uint32_t rows, n, has_w, has_b;
            float eps;
            if (!get(in, &rows, 4) || !get(in, &n, 4) || !get(in, &eps, 4) ||
                !get(in, &has_w, 4) || !get(in, &has_b, 4) || n == 0 || rows == 0 ||
                (size_t)rows * n > (1u << 24))
                return 1;
            size_t count = (size_t)rows * n;
            float *w = has_w ? malloc(4 * (size_t)n) : NULL;
            float *b = has_b ? malloc(4 * (size_t)n) : NULL, *x = malloc(4 * count);
            if ((has_w && (!w || !get(in, w, 4 * (size_t)n))) ||
                (has_b && (!b || !get(in, b, 4 * (size_t)n))) || !x || !get(in, x, 4 * count))
                return 1;
            if (op == 3 && !lanes(x, rows, n, w, b, eps)) return 1;
            if (op == 2) mdla_cpu_layer_norm_f32(x, rows, n, w, b, eps, x);
            fwrite(x, 4, count, out);
            free(w), free(b), free(x);
            continue;
        }
        if (op != 0) return 1;
        uint32_t rows, n, has_w, has_b;
        float s_in, s_out, eps;
        int32_t z_in, z_out;
        if (!get(in, &rows, 4) || !get(in, &n, 4) || !get(in, &s_in, 4) || !get(in, &z_in, 4) ||
            !get(in, &s_out, 4) || !get(in, &z_out, 4) || !get(in, &eps, 4) ||
            !get(in, &has_w, 4) || !get(in, &has_b, 4) || n == 0 || rows == 0 ||
            (size_t)rows * n > (1u << 26))
            return 1;
        float *w = has_w ? malloc(4 * (size_t)n) : NULL, *b = has_b ? malloc(4 * (size_t)n) : NULL;
        int8_t *x = malloc((size_t)rows * n), *y = malloc((size_t)rows * n);
        float *scratch = malloc(4 * mdla_cpu_layer_norm_scratch(n));
        if ((has_w && (!w || !get(in, w, 4 * (size_t)n))) ||
            (has_b && (!b || !get(in, b, 4 * (size_t)n))) || !x || !y || !scratch ||
            !get(in, x, (size_t)rows * n))
            return 1;
        layer_norm(x, rows, n, s_in, z_in, w, b, eps, s_out, z_out, scratch, y);
        fwrite(y, 1, (size_t)rows * n, out);
        free(w), free(b), free(x), free(y), free(scratch);
    }
    return fclose(out) == 0 ? 0 : 1;
}
