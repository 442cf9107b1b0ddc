/*
 * kernel_common.c: the kernel table, the per-channel requantization pipeline and the int16 GEMM.
 *
 * Requantization (TFLite reference_integer_ops/conv.h output stage):
 *     (M_c, s_c) = QuantizeMultiplier((double)s_in * (double)s_w[c] / (double)s_out)
 *     out[c]     = clamp(MBQM(acc[c] + bias[c], M_c, s_c) + z_out, act_min, act_max)
 * acc + bias is formed in int64 (TFLite's int32 accumulator never overflows for filters of at
 * most 2^16 taps: |w| <= 127, |x - z_in| <= 255).
 */
#include <string.h>

#include "kernels.h"

static const EmuKernel *const table[] = {
    &emu_k_conv_2d, &emu_k_depthwise_conv_2d, &emu_k_fully_connected, &emu_k_average_pool_2d,
    &emu_k_max_pool_2d, &emu_k_add, &emu_k_sub, &emu_k_mul, &emu_k_relu, &emu_k_relu1,
    &emu_k_relu6, &emu_k_logistic, &emu_k_tanh, &emu_k_hard_swish, &emu_k_softmax,
    &emu_k_concatenation, &emu_k_pad, &emu_k_reshape, &emu_k_mean, &emu_k_resize_bilinear,
};

const EmuKernel *emu_kernel(int32_t code) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i]->code == code) return table[i];
    return NULL;
}

bool emu_dims_are(const EmuOperand *o, uint32_t rank, const uint32_t *dims) {
    if (o->rank != rank) return false;
    for (uint32_t i = 0; i < rank; i++)
        if (o->dims[i] != dims[i]) return false;
    return true;
}

int emu_requant_prepare(const NeuronModel *m, uint32_t in, uint32_t w, uint32_t bias,
                        uint32_t out, int32_t channels, uint32_t channel_dim, int32_t fuse,
                        int rounding, EmuRequant *rq) {
    const EmuOperand *x = &m->opnds[in], *f = &m->opnds[w], *b = &m->opnds[bias],
                     *y = &m->opnds[out];
    memset(rq, 0, sizeof *rq);
    EMU_CHECK(emu_is_int8_act(x->type) && emu_is_int8_act(y->type));
    EMU_CHECK(f->lifetime == EMU_CONST || f->has_value);
    if (f->type == NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL) {
        EMU_CHECK(f->channel_count == (uint32_t)channels && f->channel_dim == channel_dim);
    } else {
        EMU_CHECK(f->zero_point == 0 && f->scale > 0.0f); /* symmetric per-tensor weights */
    }
    EMU_CHECK(b->has_value && (b->omitted || (b->rank == 1 && b->dims[0] == (uint32_t)channels)));
    rq->channels = channels;
    rq->mult = malloc((size_t)channels * sizeof *rq->mult);
    rq->shift = malloc((size_t)channels * sizeof *rq->shift);
    rq->bias = calloc((size_t)channels, sizeof *rq->bias);
    if (rq->mult == NULL || rq->shift == NULL || rq->bias == NULL) {
        emu_requant_free(rq);
        return NEURON_OUT_OF_MEMORY;
    }
    if (!b->omitted) memcpy(rq->bias, b->value, (size_t)channels * sizeof *rq->bias);
    for (int32_t c = 0; c < channels; c++) {
        const float s_w = f->channel_count ? f->channel_scales[c] : f->scale;
        const double real = (double)x->scale * (double)s_w / (double)y->scale;
        emu_quantize_multiplier(real, rounding, &rq->mult[c], &rq->shift[c]);
    }
    rq->z_out = y->zero_point;
    rq->rounding = rounding;
    emu_activation_range(fuse, y->scale, y->zero_point, &rq->lo, &rq->hi);
    return NEURON_NO_ERROR;
}

void emu_requant_free(EmuRequant *rq) {
    free(rq->mult);
    free(rq->shift);
    free(rq->bias);
    rq->mult = NULL;
    rq->shift = NULL;
    rq->bias = NULL;
}

void emu_requant_row(const EmuRequant *rq, const int32_t *acc, int8_t *out) {
    for (int32_t c = 0; c < rq->channels; c++) {
        const int64_t v = (int64_t)acc[c] + rq->bias[c];
        const int64_t q = emu_mbqm(v, rq->mult[c], rq->shift[c], rq->rounding) + rq->z_out;
        out[c] = (int8_t)emu_clamp(q, rq->lo, rq->hi);
    }
}

/* Dot products of int16 rows: the inner loop runs over contiguous k, which gcc and clang turn
 * into widening multiply-adds (pmaddwd / smlal) at -O2 and above. Blocking: four output columns
 * share each load of an `a` row, and the caller hands over a tile of rows whose im2col data
 * stays in cache while all columns stream past. |sum| <= depth * 255 * 128 < 2^31 for
 * depth <= 2^16. */
void emu_gemm_s16(const int16_t *a, const int16_t *b, int32_t *out, int32_t rows, int32_t cols,
                  int32_t depth) {
    int32_t o = 0;
    for (; o + 4 <= cols; o += 4) {
        const int16_t *b0 = b + (size_t)o * depth, *b1 = b0 + depth, *b2 = b1 + depth,
                      *b3 = b2 + depth;
        for (int32_t p = 0; p < rows; p++) {
            const int16_t *ap = a + (size_t)p * depth;
            int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int32_t k = 0; k < depth; k++) {
                const int32_t v = ap[k];
                s0 += v * b0[k];
                s1 += v * b1[k];
                s2 += v * b2[k];
                s3 += v * b3[k];
            }
            int32_t *op = out + (size_t)p * cols + o;
            op[0] = s0;
            op[1] = s1;
            op[2] = s2;
            op[3] = s3;
        }
    }
    for (; o < cols; o++) {
        const int16_t *bo = b + (size_t)o * depth;
        for (int32_t p = 0; p < rows; p++) {
            const int16_t *ap = a + (size_t)p * depth;
            int32_t s = 0;
            for (int32_t k = 0; k < depth; k++) s += (int32_t)ap[k] * bo[k];
            out[(size_t)p * cols + o] = s;
        }
    }
}

int emu_broadcast_prepare(const EmuOperand *a, const EmuOperand *b, const EmuOperand *y,
                          EmuBroadcast *bc) {
    const uint32_t r = EMU_MAX_RANK;
    EMU_CHECK(a->rank <= r && b->rank <= r && y->rank == (a->rank > b->rank ? a->rank : b->rank));
    uint64_t sa = 1, sb = 1;
    for (uint32_t k = 0; k < r; k++) { /* k counts dims from the right */
        const uint32_t i = r - 1 - k;
        const uint32_t da = k < a->rank ? a->dims[a->rank - 1 - k] : 1;
        const uint32_t db = k < b->rank ? b->dims[b->rank - 1 - k] : 1;
        const uint32_t dy = k < y->rank ? y->dims[y->rank - 1 - k] : 1;
        EMU_CHECK((da == db || da == 1 || db == 1) && dy == (da > db ? da : db));
        bc->dims[i] = dy;
        bc->stride_a[i] = da == 1 ? 0 : sa;
        bc->stride_b[i] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
    }
    return NEURON_NO_ERROR;
}

void emu_broadcast_run(const EmuBroadcast *bc, const void *ctx, const int8_t *a, const int8_t *b,
                       int8_t *out, EmuRunFn fn) {
    const uint32_t r = EMU_MAX_RANK, inner = bc->dims[r - 1];
    uint64_t outer = 1;
    for (uint32_t i = 0; i + 1 < r; i++) outer *= bc->dims[i];
    uint32_t idx[EMU_MAX_RANK] = {0};
    for (uint64_t o = 0; o < outer; o++) {
        uint64_t oa = 0, ob = 0;
        for (uint32_t i = 0; i + 1 < r; i++) {
            oa += idx[i] * bc->stride_a[i];
            ob += idx[i] * bc->stride_b[i];
        }
        fn(ctx, a + oa, b + ob, out + o * inner, inner, (uint32_t)bc->stride_a[r - 1],
           (uint32_t)bc->stride_b[r - 1]);
        for (int i = (int)r - 2; i >= 0; i--) { /* odometer over the outer dims */
            if (++idx[i] < bc->dims[i]) break;
            idx[i] = 0;
        }
    }
}

int emu_lut_alloc(const NeuronModel *m, const EmuOperation *op, EmuLut **lut) {
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    *lut = NULL;
    EMU_CHECK(emu_is_int8_act(x->type) && emu_is_int8_act(y->type));
    EMU_CHECK(emu_dims_are(y, x->rank, x->dims));
    *lut = calloc(1, sizeof **lut);
    if (*lut == NULL) return NEURON_OUT_OF_MEMORY;
    (*lut)->count = emu_elements(x);
    return NEURON_NO_ERROR;
}

void emu_lut_eval(const void *params, const void *const *inputs, void *output,
                  EmuScratch *scratch) {
    (void)scratch;
    const EmuLut *p = params;
    const int8_t *x = inputs[0];
    int8_t *y = output;
    for (uint64_t i = 0; i < p->count; i++) y[i] = p->table[x[i] + 128];
}
