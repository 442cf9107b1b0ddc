/*
 * PAD, int8 or int16 (16x8: TENSOR_QUANT16_SYMM, zero point 0) (TFLite reference_ops Pad):
 * out = pad(x, paddings, value = z), z the zero point (real 0). paddings is TENSOR_INT32 [rank, 2] of (before, after), all >= 0. Input and output
 * share scale and zero point. Rows of the last dim are copied whole; the rest is filled.
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    uint32_t rank;
    uint32_t in_dims[EMU_MAX_RANK], out_dims[EMU_MAX_RANK], before[EMU_MAX_RANK];
    uint64_t out_count;
    int8_t value;
    uint32_t size; /* bytes per element (an int16 pads with 0: both bytes 0) */
} PadParams;

static int pad_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    (void)num;
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *pads = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    const bool wide = y->type == NEURON_TENSOR_QUANT16_SYMM && x->type == y->type;
    EMU_CHECK((emu_is_int8_act(y->type) || (wide && y->zero_point == 0)) &&
              emu_same_quant(x, y) && x->rank >= 1);
    EMU_CHECK(pads->has_value && !pads->omitted && pads->rank == 2 && pads->dims[0] == x->rank &&
              pads->dims[1] == 2);
    PadParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    const int32_t *pv = pads->value;
    bool ok = y->rank == x->rank;
    p->rank = x->rank;
    for (uint32_t d = 0; ok && d < x->rank; d++) {
        ok = pv[2 * d] >= 0 && pv[2 * d + 1] >= 0 && pv[2 * d] <= 65535 && pv[2 * d + 1] <= 65535 &&
             y->dims[d] == x->dims[d] + (uint32_t)pv[2 * d] + (uint32_t)pv[2 * d + 1];
        p->in_dims[d] = x->dims[d];
        p->out_dims[d] = y->dims[d];
        p->before[d] = (uint32_t)(ok ? pv[2 * d] : 0);
    }
    if (!ok) {
        free(p);
        return NEURON_BAD_DATA;
    }
    p->out_count = emu_elements(y);
    p->value = (int8_t)y->zero_point;
    p->size = wide ? 2 : 1;
    *out = p;
    return NEURON_NO_ERROR;
}

typedef struct {
    const PadParams *p;
    const int8_t *x;
    int8_t *y;
} PadJob;

/* Copies input rows [begin, end) (rows of the innermost dim) to their places in the output. */
static void pad_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const PadJob *j = ctx;
    const PadParams *p = j->p;
    const uint32_t r = p->rank, row = p->in_dims[r - 1];
    uint32_t idx[EMU_MAX_RANK] = {0};
    uint64_t rest = (uint64_t)begin; /* begin < end: no outer dim is 0 */
    for (int d = (int)r - 2; d >= 0; d--) {
        idx[d] = (uint32_t)(rest % p->in_dims[d]);
        rest /= p->in_dims[d];
    }
    for (uint64_t k = (uint64_t)begin; k < (uint64_t)end; k++) {
        uint64_t off = 0; /* output offset of this input row's first element */
        for (uint32_t d = 0; d < r; d++)
            off = off * p->out_dims[d] + (d + 1 < r ? idx[d] + p->before[d] : p->before[d]);
        memcpy(j->y + off * p->size, j->x + k * row * p->size, (size_t)row * p->size);
        for (int d = (int)r - 2; d >= 0; d--) {
            if (++idx[d] < p->in_dims[d]) break;
            idx[d] = 0;
        }
    }
}

static void pad_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    const PadParams *p = params;
    const PadJob job = {p, inputs[0], output};
    memset(output, p->value, p->out_count * p->size);
    uint64_t rows = 1;
    for (uint32_t d = 0; d + 1 < p->rank; d++) rows *= p->in_dims[d];
    const int64_t row = p->in_dims[p->rank - 1];
    emu_parallel_for(scratch, (int64_t)rows, emu_par_grain(scratch, row), pad_rows, &job);
}

const EmuKernel emu_k_pad = {NEURON_PAD, "PAD", pad_prepare, pad_eval, NULL, free};
