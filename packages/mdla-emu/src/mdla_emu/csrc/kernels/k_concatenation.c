/*
 * CONCATENATION, int8 or int16 (16x8, TENSOR_QUANT16_SYMM; TFLite reference_ops
 * Concatenation): values move unchanged, 1 or 2 bytes each.
 *
 *     out[..., offset_i + j, ...] = x_i[..., j, ...]     along `axis`
 * Every input shares the output's scale and zero point (LiteRT rejects int8 inputs whose params
 * differ, and the MDLA does too: silicon fact 7; unequal scales make the op unmappable on every
 * device, see device.c), so there is no rescaling. As outer x (axis *
 * inner) blocks: each input contributes one contiguous run per outer index.
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    uint32_t n_inputs;
    uint64_t outer;
    uint64_t run[]; /* bytes per outer index of each input */
} ConcatParams;

static int concat_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                          void **out) {
    (void)num;
    *out = NULL;
    const uint32_t n = op->n_in - 1;
    const EmuOperand *y = &m->opnds[op->out[0]];
    int32_t axis = 0;
    EMU_CHECK(emu_scalar_i32(m, op->in[n], &axis) == NEURON_NO_ERROR);
    const bool wide = y->type == NEURON_TENSOR_QUANT16_SYMM;
    EMU_CHECK((wide || emu_is_int8_act(y->type)) && y->rank >= 1);
    EMU_CHECK(axis >= -(int32_t)y->rank && axis < (int32_t)y->rank);
    const uint32_t ax = (uint32_t)(axis < 0 ? axis + (int32_t)y->rank : axis);
    uint64_t along = 0;
    for (uint32_t i = 0; i < n; i++) {
        const EmuOperand *x = &m->opnds[op->in[i]];
        EMU_CHECK(x->rank == y->rank); /* one shared scale: a device constraint (device.c) */
        EMU_CHECK(!wide || (x->type == y->type && emu_same_quant(x, y))); /* device.c: int8 */
        for (uint32_t d = 0; d < y->rank; d++) EMU_CHECK(d == ax || x->dims[d] == y->dims[d]);
        along += x->dims[ax];
    }
    EMU_CHECK(along == y->dims[ax]);
    ConcatParams *p = calloc(1, sizeof *p + n * sizeof(uint64_t));
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    p->n_inputs = n;
    p->outer = 1;
    uint64_t inner = emu_type_size(y->type); /* bytes of one element, then of the inner dims */
    for (uint32_t d = 0; d < ax; d++) p->outer *= y->dims[d];
    for (uint32_t d = ax + 1; d < y->rank; d++) inner *= y->dims[d];
    for (uint32_t i = 0; i < n; i++) p->run[i] = m->opnds[op->in[i]].dims[ax] * inner;
    *out = p;
    return NEURON_NO_ERROR;
}

typedef struct {
    const ConcatParams *p;
    const void *const *inputs;
    int8_t *out;
    uint64_t width; /* output bytes per outer index: the sum of the runs */
} ConcatJob;

static void concat_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const ConcatJob *j = ctx;
    const ConcatParams *p = j->p;
    int8_t *dst = j->out + (uint64_t)begin * j->width;
    for (uint64_t o = (uint64_t)begin; o < (uint64_t)end; o++)
        for (uint32_t i = 0; i < p->n_inputs; i++) {
            memcpy(dst, (const int8_t *)j->inputs[i] + o * p->run[i], p->run[i]);
            dst += p->run[i];
        }
}

static void concat_eval(const void *params, const void *const *inputs, void *output,
                        EmuScratch *scratch) {
    const ConcatParams *p = params;
    ConcatJob job = {p, inputs, output, 0};
    for (uint32_t i = 0; i < p->n_inputs; i++) job.width += p->run[i];
    emu_parallel_for(scratch, (int64_t)p->outer, emu_par_grain(scratch, (int64_t)job.width),
                     concat_rows, &job);
}

const EmuKernel emu_k_concatenation = {NEURON_CONCATENATION, "CONCATENATION", concat_prepare,
                                       concat_eval, NULL, free};
