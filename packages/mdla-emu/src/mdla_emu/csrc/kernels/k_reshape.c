/*
 * RESHAPE, int8 or int16 (16x8): out = reshape(x, shape), the bytes unchanged. `shape` is TENSOR_INT32 1-D
 * (one -1 allowed, inferred); it must agree with the output operand's dims. Input and output
 * share scale and zero point.
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    uint64_t bytes;
} ReshapeParams;

static int reshape_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                           void **out) {
    (void)num;
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *shape = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    EMU_CHECK((emu_is_int8_act(y->type) || y->type == NEURON_TENSOR_QUANT16_SYMM) &&
              x->type == y->type && emu_same_quant(x, y));
    EMU_CHECK(shape->has_value && !shape->omitted && shape->rank == 1 && shape->dims[0] == y->rank);
    EMU_CHECK(emu_elements(x) == emu_elements(y));
    const int32_t *sv = shape->value;
    uint32_t unknown = 0;
    for (uint32_t d = 0; d < y->rank; d++) {
        if (sv[d] == -1) {
            unknown++;
            continue;
        }
        EMU_CHECK(sv[d] >= 1 && (uint32_t)sv[d] == y->dims[d]);
    }
    EMU_CHECK(unknown <= 1);
    ReshapeParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    p->bytes = emu_bytes(x);
    *out = p;
    return NEURON_NO_ERROR;
}

static void reshape_eval(const void *params, const void *const *inputs, void *output,
                         EmuScratch *scratch) {
    (void)scratch;
    const ReshapeParams *p = params;
    if (output != inputs[0]) memcpy(output, inputs[0], p->bytes);
}

const EmuKernel emu_k_reshape = {NEURON_RESHAPE, "RESHAPE", reshape_prepare, reshape_eval, NULL,
                                 free};
