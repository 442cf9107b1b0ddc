/*
 * cpu_part.h: mdla-engine's "cpu" device, which runs a manifest's cpu partitions in-process
 * (issue 17) with the project's own C kernels:
 *
 *   int8 ops     the host emulator's kernels (emu/k_*.c, the ones libneuron_emu.so runs, bit
 *                exact with mdla_quant.run_int8), called directly: this file fills the
 *                emulator's model structs from the manifest (no Neuron ABI in between), so the
 *                engine never defines a NeuronModel_* symbol and cannot clash with a vendor
 *                libneuron_adapter.so it dlopens; TRANSPOSE has a kernel of its own
 *                (emu/k_transpose.c), the emulator's table lacks it.
 *   host ops     (codes from MDLA_HOST_OP_BASE) LAYER_NORM with cpu/float_ops.c: DEQUANTIZE,
 *                the float32 kernel, QUANTIZE; the table group (GELU, ELU, Mish, EXP, ...: every
 *                host op of form `x:a table:a`) through the int8 table the manifest carries;
 *                ARGMAX on the int8 codes (class indices out).
 *   float32      a float region (cpu/gru.c): DEQUANTIZE (int8 -> float32), then GRU and
 *                FULLY_CONNECTED_F32 on float32 tensors (a float32 model output possible).
 *
 * One thread unless MDLA_CPU_THREADS says more (cpu_split.h); requantization in the manifest's
 * rounding; int32 accumulators never wrap (the CPU's requantization is int64, the target's
 * "saturate").
 */
#ifndef MDLA_CPU_PART_H
#define MDLA_CPU_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "manifest.h"

typedef struct mdla_cpu_part mdla_cpu_part;

typedef struct {
    long op;       /* the manifest operation that failed, -1 when none */
    int status;    /* exit code: 1 operands wrong for the kernel, 3 no kernel, 4 out of memory */
    char why[256];
} mdla_cpu_error;

/* Validate and freeze every operation of partition `p` (the kernels' prepare); false with
 * `err` filled on the first problem. */
bool mdla_cpu_prepare(const mdla_manifest *m, const mdla_partition *p, mdla_cpu_part **out,
                      mdla_cpu_error *err);

/* Run the partition: `data[o]` is the buffer of every non-constant operand `o` the partition
 * reads or writes (constants come from the manifest). */
void mdla_cpu_run(mdla_cpu_part *cp, void *const *data);

void mdla_cpu_free(mdla_cpu_part *cp);

#endif /* MDLA_CPU_PART_H */
