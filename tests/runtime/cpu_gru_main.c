/* A test driver of csrc/cpu/gru.c for builds Python cannot load (aarch64 under qemu): reads
 * records from argv[1], writes each record's float32 result to argv[2], in order.
 *   0 (GRU): u32 steps, u32 in, u32 hidden, u32 dirs, then f32 x [steps, in],
 *            w_ih [dirs, 3H, in], w_hh [dirs, 3H, H], b_ih [dirs, 3H], b_hh [dirs, 3H]
 *            -> steps * dirs * H f32
 *   1 (FULLY_CONNECTED_F32): u32 rows, u32 in, u32 units, f32 x, w [units, in], b [units]
 *            -> rows * units f32
 *   2 (SIGMOID and TANH): u32 n, n f32 -> n f32 sigmoid, then n f32 tanh
 *   3 (DEQUANTIZE): u32 n, f32 scale, i32 zero point, n int8 -> n f32
 * Little-endian, packed; exit 1 on a short or malformed file. */
#include <stdio.h>
#include <stdlib.h>

#include "gru.h"

static int get(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

static float *floats(FILE *f, size_t n) {
    float *v = malloc(n * sizeof *v + 1);
    if (v && !get(f, v, n * sizeof *v)) {
        free(v);
        return NULL;
    }
    return v;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    if (!in || !out) return 1;
    int32_t op;
    while (get(in, &op, 4)) {
        uint32_t d[4];
        if (op == 0) {
            if (!get(in, d, 16) || !d[0] || !d[1] || !d[2] || d[3] < 1 || d[3] > 2) return 1;
            size_t t = d[0], i = d[1], h = d[2], n = d[3];
            float *x = floats(in, t * i), *wi = floats(in, n * 3 * h * i);
            float *wh = floats(in, n * 3 * h * h), *bi = floats(in, n * 3 * h);
            float *bh = floats(in, n * 3 * h), *y = malloc(t * n * h * sizeof *y);
            float *s = malloc(mdla_cpu_gru_scratch(i, h) * sizeof *s);
            if (!x || !wi || !wh || !bi || !bh || !y || !s) return 1;
            mdla_cpu_gru(x, t, i, h, n, wi, wh, bi, bh, s, y);
            fwrite(y, 4, t * n * h, out);
            free(x), free(wi), free(wh), free(bi), free(bh), free(y), free(s);
        } else if (op == 1) {
            if (!get(in, d, 12) || !d[0] || !d[1] || !d[2]) return 1;
            size_t r = d[0], i = d[1], u = d[2];
            float *x = floats(in, r * i), *w = floats(in, u * i), *b = floats(in, u);
            float *y = malloc(r * u * sizeof *y);
            if (!x || !w || !b || !y) return 1;
            mdla_cpu_fc_f32(x, r, i, u, w, b, y);
            fwrite(y, 4, r * u, out);
            free(x), free(w), free(b), free(y);
        } else if (op == 2) {
            if (!get(in, d, 4)) return 1;
            float *x = floats(in, d[0]);
            if (!x) return 1;
            for (uint32_t k = 0; k < d[0]; k++) {
                const float v = mdla_cpu_sigmoid(x[k]);
                fwrite(&v, 4, 1, out);
            }
            for (uint32_t k = 0; k < d[0]; k++) {
                const float v = mdla_cpu_tanh(x[k]);
                fwrite(&v, 4, 1, out);
            }
            free(x);
        } else if (op == 3) {
            float scale;
            int32_t z;
            if (!get(in, d, 4) || !get(in, &scale, 4) || !get(in, &z, 4)) return 1;
            int8_t *q = malloc(d[0] + 1);
            float *x = malloc(d[0] * sizeof *x + 1);
            if (!q || !x || !get(in, q, d[0])) return 1;
            mdla_cpu_dequantize(q, d[0], scale, z, x);
            fwrite(x, 4, d[0], out);
            free(q), free(x);
        } else {
            return 1;
        }
    }
    return fclose(out) == 0 ? 0 : 1;
}
