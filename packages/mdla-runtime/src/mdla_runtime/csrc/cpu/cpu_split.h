/*
 * cpu_split.h: the cpu partitions' threads. MDLA_CPU_THREADS=n (default 1) gives a cpu
 * partition n - 1 worker threads of the emulator's pool (pool.c): the emulator's int8 kernels
 * then cut their work exactly as they do in libneuron_emu.so, and the two host kernels that
 * dominate ConvNeXt-style partitions here, LAYER_NORM by rows and the table group by element
 * ranges. Each row or element is computed by the same code whatever the cut, so the bytes do
 * not depend on n. Below MDLA_EMU_MIN_WORK per thread an op stays on one.
 */
#ifndef MDLA_CPU_SPLIT_H
#define MDLA_CPU_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "emu.h"

/* One LAYER_NORM's operands (float_ops.h mdla_cpu_layer_norm). */
typedef struct {
    const int8_t *x;
    size_t n; /* the normalized length: one row */
    float s_in;
    int32_t z_in;
    const float *w, *b;
    float eps, s_out;
    int32_t z_out;
    int8_t *y;
    int isa; /* set by mdla_cpu_layer_norm_split: emu_isa() (AVX2 and above: the AVX2 kernel,
              * NEON: the NEON one, else the C) */
} mdla_ln_job;

/* mdla_cpu_layer_norm over `rows` rows, cut over s's threads; each thread's scratch holds
 * at least mdla_cpu_layer_norm_scratch(n) floats. */
void mdla_cpu_layer_norm_split(EmuScratch *s, size_t rows, const mdla_ln_job *job);
/* y[i] = table[x[i] + 128] (GELU and the table group) cut over s's threads, each range on the
 * emulator's table lookup (kernels.h emu_lut_apply: AVX512-VBMI, NEON or C, the same bytes). */
void mdla_cpu_apply_table_split(EmuScratch *s, const int8_t *x, size_t count,
                                const int8_t table[256], int8_t *y);

#endif /* MDLA_CPU_SPLIT_H */
