/*
 * fuzz_manifest.c: libFuzzer target for the C manifest reader.
 *
 *   clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined fuzz_manifest.c manifest*.c \
 *         mdla_msgpack.c -o fuzz_manifest && ./fuzz_manifest -max_total_time=20 CORPUS_DIR
 *
 * Any input must either parse or fail with a filled error; a parsed manifest's slices must lie
 * inside the buffer (touched byte by byte so AddressSanitizer checks them).
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
        (void)sink;
        mdla_manifest_free(&m);
    } else if (!err.kind || err.offset > size) {
        abort(); /* every failure names its kind and an offset inside the file */
    }
    free(buf);
    return 0;
}
