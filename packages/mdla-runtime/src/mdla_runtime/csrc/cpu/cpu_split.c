/*
 * cpu_split.c: LAYER_NORM and the table group cut over a cpu partition's threads (cpu_split.h).
 */
#include "cpu_split.h"

#include "float_ops.h"
#include "kernels.h"
#include "simd.h"

static void ln_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const mdla_ln_job *j = ctx;
    const size_t first = (size_t)begin * j->n;
#ifdef MDLA_CPU_LN_AVX2
    if (j->isa == EMU_ISA_AVX2 || j->isa == EMU_ISA_AVX512) {
        mdla_cpu_layer_norm_avx2(j->x + first, (size_t)(end - begin), j->n, j->s_in, j->z_in,
                                 j->w, j->b, j->eps, j->s_out, j->z_out, (float *)scratch,
                                 j->y + first);
        return;
    }
#endif
#ifdef MDLA_CPU_LN_NEON
    if (j->isa == EMU_ISA_NEON) {
        mdla_cpu_layer_norm_neon(j->x + first, (size_t)(end - begin), j->n, j->s_in, j->z_in,
                                 j->w, j->b, j->eps, j->s_out, j->z_out, (float *)scratch,
                                 j->y + first);
        return;
    }
#endif
    mdla_cpu_layer_norm(j->x + first, (size_t)(end - begin), j->n, j->s_in, j->z_in, j->w, j->b,
                        j->eps, j->s_out, j->z_out, (float *)scratch, j->y + first);
}

void mdla_cpu_layer_norm_split(EmuScratch *s, size_t rows, const mdla_ln_job *job) {
    mdla_ln_job j = *job;
    j.isa = emu_isa();
    /* a row costs a few float operations per element: 4 units each */
    emu_parallel_for(s, (int64_t)rows, emu_par_grain(s, 4 * (int64_t)job->n), ln_rows, &j);
}

typedef struct {
    const int8_t *x;
    const int8_t *table;
    int8_t *y;
    int path; /* emu_lut_path(): the emulator's vector lookups of its table ops (kernels.h) */
} TableJob;

static void table_range(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const TableJob *j = ctx;
    emu_lut_apply(j->path, j->table, j->x + begin, j->y + begin, (uint64_t)(end - begin));
}

void mdla_cpu_apply_table_split(EmuScratch *s, const int8_t *x, size_t count,
                                const int8_t table[256], int8_t *y) {
    const TableJob job = {x, table, y, emu_lut_path()};
    emu_parallel_for(s, (int64_t)count, emu_par_grain(s, 1), table_range, &job);
}
