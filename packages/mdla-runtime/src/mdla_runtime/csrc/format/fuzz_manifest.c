/*
 * fuzz_manifest.c: libFuzzer target for the C manifest reader.
 *
 *   clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined fuzz_manifest.c manifest*.c \
 *         mdla_msgpack.c -o fuzz_manifest && ./fuzz_manifest -max_total_time=20 CORPUS_DIR
 *
 * Any input must either parse or fail with a filled error; a parsed manifest's slices must lie
 * inside the buffer (touched byte by byte so AddressSanitizer checks them), and its partitions
 * must hold every operation once, run no reader before its writer, and index in range.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a private, exactly-sized copy so any read past the end is caught */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    mdla_manifest m;
    mdla_error err;
    if (mdla_manifest_parse(buf, size, &m, &err)) {
        volatile uint8_t sink = 0;
        for (uint32_t i = 0; i < m.n_operands; i++) {
            const mdla_operand *o = &m.operands[i];
            for (uint64_t k = 0; o->has_data && k < o->data_len; k++) sink ^= o->data[k];
            for (uint32_t k = 0; k < o->n_scales; k++) {
                uint32_t bits;
                memcpy(&bits, &o->scales[k], 4);
                sink ^= (uint8_t)bits;
            }
        }
        for (uint32_t i = 0; i < m.n_operations; i++)
            for (uint32_t k = 0; k < m.operations[i].n_inputs; k++)
                if (m.operations[i].inputs[k] >= m.n_operands) abort();
        /* partitions (format 3, or format 2's one): every operation in exactly one, every
         * index in range, every input made by an earlier partition or the model */
        uint32_t *owner = malloc((m.n_operations ? m.n_operations : 1) * sizeof *owner);
        if (!owner || !m.n_partitions) abort();
        for (uint32_t i = 0; i < m.n_operations; i++) owner[i] = UINT32_MAX;
        for (uint32_t p = 0; p < m.n_partitions; p++) {
            const mdla_partition *pt = &m.partitions[p];
            for (uint32_t k = 0; k < pt->n_operations; k++) {
                if (pt->operations[k] >= m.n_operations || owner[pt->operations[k]] != UINT32_MAX)
                    abort();
                owner[pt->operations[k]] = p;
            }
            for (uint32_t k = 0; k < pt->n_inputs; k++)
                if (pt->inputs[k] >= m.n_operands) abort();
            for (uint32_t k = 0; k < pt->n_outputs; k++)
                if (pt->outputs[k] >= m.n_operands) abort();
        }
        for (uint32_t i = 0; i < m.n_operations; i++) {
            if (owner[i] == UINT32_MAX) abort();
            for (uint32_t k = 0; k < m.operations[i].n_outputs; k++) {
                uint32_t x = m.operations[i].outputs[k];
                for (uint32_t j = 0; j < m.n_operations; j++)
                    for (uint32_t q = 0; q < m.operations[j].n_inputs; q++)
                        if (m.operations[j].inputs[q] == x && owner[j] < owner[i]) abort();
            }
        }
        free(owner);
        (void)sink;
        mdla_manifest_free(&m);
    } else if (!err.kind || err.offset > size) {
        abort(); /* every failure names its kind and an offset inside the file */
    }
    free(buf);
    return 0;
}
