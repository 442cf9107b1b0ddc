/*
 * STRIDED_SLICE, int8 (the twin of mdla_quant/kernels/strided_slice.py), TFLite's semantics:
 *
 *     per axis d: b = begin[d] (+ dims[d] if negative), e = end[d] likewise, or when bit d of
 *     end_mask is set dims[d] (stride > 0) / -1 (stride < 0); the output keeps
 *     ceil((e - b) / stride) values, b, b + stride, ...;  out[i] = in[b + i * stride]
 *
 * Codes move unchanged: input and output share scale and zero point. Operands: input, begin,
 * end, strides (TENSOR_INT32 [rank]), begin_mask (0), end_mask, shrink_axis_mask (0).
 *
 * Not in the emulator's kernel table (kernel_common.c): no device of the target maps it;
 * mdla-engine runs it in cpu partitions (cpu/cpu_part.c).
 */
#include <string.h>

#include "kernels.h"

typedef struct {
    uint32_t rank;
    uint64_t count, base;          /* output values; input offset of output index 0 */
    uint32_t dims[EMU_MAX_RANK];   /* output dims */
    int64_t step[EMU_MAX_RANK];    /* input offset change per output index step on axis k */
} StridedSliceParams;

static bool int32_vector(const EmuOperand *o, uint32_t rank, int32_t *out) {
    if (o->type != NEURON_TENSOR_INT32 || !o->has_value || o->omitted || o->rank != 1 ||
        o->dims[0] != rank || o->value_len != (size_t)rank * sizeof(int32_t))
        return false;
    memcpy(out, o->value, (size_t)rank * sizeof(int32_t));
    return true;
}

static int32_t scalar(const EmuOperand *o) {
    int32_t v = -1;
    if (o->type == NEURON_INT32 && o->has_value && o->value_len == sizeof v)
        memcpy(&v, o->value, sizeof v);
    return v;
}

static int strided_slice_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                                 void **out) {
    (void)num;
    *out = NULL;
    EMU_CHECK(op->n_in == 7 && op->n_out == 1);
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    EMU_CHECK(emu_is_int8_act(x->type) && x->type == y->type && emu_same_quant(x, y));
    EMU_CHECK(x->rank >= 1 && x->rank <= EMU_MAX_RANK && y->rank == x->rank);
    int32_t begin[EMU_MAX_RANK], end[EMU_MAX_RANK], stride[EMU_MAX_RANK];
    EMU_CHECK(int32_vector(&m->opnds[op->in[1]], x->rank, begin) &&
              int32_vector(&m->opnds[op->in[2]], x->rank, end) &&
              int32_vector(&m->opnds[op->in[3]], x->rank, stride));
    const int32_t end_mask = scalar(&m->opnds[op->in[5]]);
    EMU_CHECK(scalar(&m->opnds[op->in[4]]) == 0 && scalar(&m->opnds[op->in[6]]) == 0 &&
              end_mask >= 0);
    StridedSliceParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    p->rank = x->rank;
    p->count = emu_elements(y);
    int64_t in_stride = 1;
    for (uint32_t d = x->rank; d-- > 0;) {
        const int64_t n = x->dims[d], s = stride[d];
        const int64_t b = begin[d] < 0 ? begin[d] + n : begin[d];
        const int64_t e = (end_mask >> d) & 1 ? (s > 0 ? n : -1) : (end[d] < 0 ? end[d] + n : end[d]);
        const int64_t kept = s > 0 ? (e - b + s - 1) / s : (b - e - s - 1) / -s;
        const int64_t last = b + (kept - 1) * s;
        if (s == 0 || kept < 1 || kept != y->dims[d] || b < 0 || b >= n || last < 0 || last >= n) {
            free(p);
            return NEURON_BAD_DATA;
        }
        p->dims[d] = y->dims[d];
        p->step[d] = s * in_stride;
        p->base += (uint64_t)(b * in_stride);
        in_stride *= n;
    }
    *out = p;
    return NEURON_NO_ERROR;
}

/* Walks the output in row-major order with an odometer over its index, the input offset kept
 * incrementally (steps may be negative). */
static void strided_slice_eval(const void *params, const void *const *inputs, void *output,
                               EmuScratch *scratch) {
    (void)scratch;
    const StridedSliceParams *p = params;
    const int8_t *x = inputs[0];
    int8_t *y = output;
    uint32_t idx[EMU_MAX_RANK] = {0};
    int64_t off = (int64_t)p->base;
    const uint32_t last = p->rank - 1;
    for (uint64_t i = 0; i < p->count; i++) {
        y[i] = x[off];
        uint32_t k = last;
        for (;;) {
            idx[k]++;
            off += p->step[k];
            if (idx[k] < p->dims[k] || k == 0) break;
            off -= (int64_t)idx[k] * p->step[k];
            idx[k] = 0;
            k--;
        }
    }
}

const EmuKernel emu_k_strided_slice = {NEURON_STRIDED_SLICE, "STRIDED_SLICE",
                                       strided_slice_prepare, strided_slice_eval, NULL, free};
