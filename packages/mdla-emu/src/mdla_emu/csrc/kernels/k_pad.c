/*
 * PAD, int8 or int16 (16x8: TENSOR_QUANT16_SYMM, zero point 0) (TFLite reference_ops Pad):
 * out = pad(x, paddings, value = z), z the zero point (real 0). paddings is TENSOR_INT32
 * [rank, 2] of (before, after), all >= 0. Input and output share scale and zero point. Each
 * output row of the last dim is written once, the rows split over the threads: the input row
 * copied whole between two fills, or all fill where the row is outside the input.
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    uint32_t rank;
    uint32_t in_dims[EMU_MAX_RANK], out_dims[EMU_MAX_RANK], before[EMU_MAX_RANK];
    int8_t value;
    uint32_t size; /* bytes per element (an int16 pads with 0: both bytes 0) */
} PadParams;

/* Merges the innermost dim into the one outside it while the innermost is not padded (an
 * unpadded channel dim makes [.., w, c] rows of w * c elements): fewer, longer rows. */
static void pad_collapse(PadParams *p) {
    while (p->rank > 1) {
        const uint32_t k = p->rank - 1, inner = p->in_dims[k];
        if (inner != p->out_dims[k] || (uint64_t)p->out_dims[k - 1] * inner > UINT32_MAX) return;
        p->in_dims[k - 1] *= inner;
        p->out_dims[k - 1] *= inner;
        p->before[k - 1] *= inner;
        p->rank = k;
    }
}

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
    p->value = (int8_t)y->zero_point;
    p->size = wide ? 2 : 1;
    pad_collapse(p);
    *out = p;
    return NEURON_NO_ERROR;
}

typedef struct {
    const PadParams *p;
    const int8_t *x;
    int8_t *y;
} PadJob;

/* Output rows (of the innermost dim) [begin, end), each written once: a row outside the input
 * in an outer dim is all `value`; one inside is `value` before, the input row, `value` after. */
static void pad_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const PadJob *j = ctx;
    const PadParams *p = j->p;
    const uint32_t r = p->rank, last = r - 1, size = p->size;
    const size_t row = (size_t)p->in_dims[last] * size, out_row = (size_t)p->out_dims[last] * size;
    const size_t before = (size_t)p->before[last] * size, after = out_row - before - row;
    uint32_t idx[EMU_MAX_RANK] = {0};
    uint64_t rest = (uint64_t)begin; /* begin < end: no outer dim is 0 */
    for (int d = (int)r - 2; d >= 0; d--) {
        idx[d] = (uint32_t)(rest % p->out_dims[d]);
        rest /= p->out_dims[d];
    }
    for (uint64_t k = (uint64_t)begin; k < (uint64_t)end; k++) {
        int8_t *y = j->y + k * out_row;
        bool inside = true;
        for (uint32_t d = 0; d < last; d++)
            inside = inside && idx[d] >= p->before[d] && idx[d] - p->before[d] < p->in_dims[d];
        if (inside) {
            uint64_t src = 0; /* the input row at this output row */
            for (uint32_t d = 0; d < last; d++) src = src * p->in_dims[d] + idx[d] - p->before[d];
            memset(y, p->value, before);
            memcpy(y + before, j->x + src * row, row);
            memset(y + before + row, p->value, after);
        } else {
            memset(y, p->value, out_row);
        }
        for (int d = (int)r - 2; d >= 0; d--) {
            if (++idx[d] < p->out_dims[d]) break;
            idx[d] = 0;
        }
    }
}

static void pad_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    const PadParams *p = params;
    const PadJob job = {p, inputs[0], output};
    uint64_t rows = 1;
    for (uint32_t d = 0; d + 1 < p->rank; d++) rows *= p->out_dims[d];
    const int64_t row = (int64_t)p->out_dims[p->rank - 1] * p->size;
    emu_parallel_for(scratch, (int64_t)rows, emu_par_grain(scratch, row), pad_rows, &job);
}

const EmuKernel emu_k_pad = {NEURON_PAD, "PAD", pad_prepare, pad_eval, NULL, free};
