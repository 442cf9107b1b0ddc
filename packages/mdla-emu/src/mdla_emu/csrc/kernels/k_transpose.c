/*
 * TRANSPOSE, int8 or int16 (16x8: TENSOR_QUANT16_SYMM) (the twin of
 * mdla_quant/kernels/transpose.py, numpy's x.transpose(perm)).
 *
 *     out[i_0, ..., i_{r-1}] = in[j]   with j[perm[k]] = i_k,   out.dims[k] = in.dims[perm[k]]
 * Codes move unchanged: input and output share scale and zero point, so it is exact by
 * construction. Operands: input, perm (TENSOR_INT32 [rank], a permutation of 0..rank-1).
 *
 * Not in the emulator's kernel table (kernel_common.c): no device of the target maps TRANSPOSE
 * through it today; mdla-engine runs it in cpu partitions (cpu/cpu_part.c).
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    uint32_t rank;
    bool wide; /* int16 elements */
    uint64_t count;
    uint32_t dims[EMU_MAX_RANK];   /* output dims */
    uint64_t stride[EMU_MAX_RANK]; /* input stride of output axis k: in_stride[perm[k]] */
} TransposeParams;

static int transpose_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                             void **out) {
    (void)num;
    *out = NULL;
    EMU_CHECK(op->n_in == 2 && op->n_out == 1);
    const EmuOperand *x = &m->opnds[op->in[0]], *perm = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    EMU_CHECK((emu_is_int8_act(x->type) || x->type == NEURON_TENSOR_QUANT16_SYMM) &&
              x->type == y->type && emu_same_quant(x, y));
    EMU_CHECK(x->rank >= 1 && x->rank <= EMU_MAX_RANK && y->rank == x->rank);
    EMU_CHECK(perm->type == NEURON_TENSOR_INT32 && perm->has_value && !perm->omitted &&
              perm->rank == 1 && perm->dims[0] == x->rank &&
              perm->value_len == (size_t)x->rank * sizeof(int32_t));
    int32_t pv[EMU_MAX_RANK];
    memcpy(pv, perm->value, (size_t)x->rank * sizeof(int32_t));
    uint64_t in_stride[EMU_MAX_RANK];
    uint64_t s = 1;
    for (uint32_t d = x->rank; d-- > 0;) {
        in_stride[d] = s;
        s *= x->dims[d];
    }
    bool seen[EMU_MAX_RANK] = {false};
    TransposeParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    p->rank = x->rank;
    p->wide = x->type == NEURON_TENSOR_QUANT16_SYMM;
    p->count = emu_elements(x);
    for (uint32_t k = 0; k < x->rank; k++) {
        const int32_t a = pv[k];
        if (a < 0 || (uint32_t)a >= x->rank || seen[a] || y->dims[k] != x->dims[a]) {
            free(p);
            return NEURON_BAD_DATA;
        }
        seen[a] = true;
        p->dims[k] = y->dims[k];
        p->stride[k] = in_stride[a];
    }
    *out = p;
    return NEURON_NO_ERROR;
}

/* Walks the output in row-major order with an odometer over its index; the input offset is
 * the sum of index * stride, kept incrementally. ELEM is the element type. */
#define TRANSPOSE_WALK(ELEM)                                                                     \
    do {                                                                                         \
        const ELEM *x = inputs[0];                                                               \
        ELEM *y = output;                                                                        \
        uint32_t idx[EMU_MAX_RANK] = {0};                                                        \
        uint64_t off = 0;                                                                        \
        const uint32_t last = p->rank - 1;                                                       \
        for (uint64_t i = 0; i < p->count; i++) {                                                \
            y[i] = x[off];                                                                       \
            uint32_t k = last;                                                                   \
            for (;;) {                                                                           \
                idx[k]++;                                                                        \
                off += p->stride[k];                                                             \
                if (idx[k] < p->dims[k] || k == 0) break;                                        \
                off -= (uint64_t)idx[k] * p->stride[k];                                          \
                idx[k] = 0;                                                                      \
                k--;                                                                             \
            }                                                                                    \
        }                                                                                        \
    } while (0)

static void transpose_eval(const void *params, const void *const *inputs, void *output,
                           EmuScratch *scratch) {
    (void)scratch;
    const TransposeParams *p = params;
    if (p->wide)
        TRANSPOSE_WALK(int16_t);
    else
        TRANSPOSE_WALK(int8_t);
}

const EmuKernel emu_k_transpose = {NEURON_TRANSPOSE, "TRANSPOSE", transpose_prepare,
                                   transpose_eval, NULL, free};
