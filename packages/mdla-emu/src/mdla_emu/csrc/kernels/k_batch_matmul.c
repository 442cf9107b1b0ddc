/*
 * BATCH_MATMUL of two int8 activations (TFLite reference_ops BatchMatMul, int8; the same
 * integers as mdla_quant's kernels/batch_matmul.py and the engine's cpu partitions).
 *
 *     (M, s) = QuantizeMultiplier((double)(s_l * s_r) / (double)s_out)   (product in float32)
 *     acc[b, i, j] = sum_t (lhs[b, i, t] - z_l) * (rhs[b, t, j] - z_r)    in int64
 *     out = clamp(MBQM(acc, M, s) + z_out, -128, 127)
 * MBQM takes acc as TFLite's int32 (wrapped or saturated by the accumulator fact, arith.h).
 * lhs is [..., m, k] ([..., k, m] with adj_x), rhs [..., k, n] ([..., n, k] with adj_y), both
 * of rank >= 2; y is [..., m, n]. A side's batch (the product of its leading dims) is y's or 1
 * (broadcast).
 */
#include "kernels.h"

typedef struct {
    size_t batch, bl, br, m, k, n;
    bool adj_x, adj_y;
    int32_t z_l, z_r, z_out;
    int64_t mult;
    int shift, rounding;
    bool wrap;
} MatmulParams;

/* The product of an operand's batch dims (all but its last two). */
static size_t batch_of(const EmuOperand *t) {
    size_t b = 1;
    for (uint32_t d = 0; d + 2 < t->rank; d++) b *= t->dims[d];
    return b;
}

/* The shapes: m, k, n from the two matrices and their flags; batches broadcast from 1. */
static int matmul_shapes(const EmuOperand *a, const EmuOperand *b, const EmuOperand *y,
                         MatmulParams *p) {
    EMU_CHECK(a->rank >= 2 && b->rank >= 2 && y->rank >= 2);
    const uint32_t ar = a->rank, br = b->rank;
    p->m = p->adj_x ? a->dims[ar - 1] : a->dims[ar - 2];
    p->k = p->adj_x ? a->dims[ar - 2] : a->dims[ar - 1];
    p->n = p->adj_y ? b->dims[br - 2] : b->dims[br - 1];
    const size_t k2 = p->adj_y ? b->dims[br - 1] : b->dims[br - 2];
    p->bl = batch_of(a);
    p->br = batch_of(b);
    p->batch = batch_of(y);
    EMU_CHECK(k2 == p->k && y->dims[y->rank - 2] == p->m && y->dims[y->rank - 1] == p->n);
    EMU_CHECK(p->bl == p->batch || p->bl == 1);
    EMU_CHECK(p->br == p->batch || p->br == 1);
    return NEURON_NO_ERROR;
}

static int matmul_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                          void **out) {
    *out = NULL;
    EMU_CHECK(op->n_in >= 2 && op->n_in <= 4 && op->n_out == 1);
    const EmuOperand *a = &m->opnds[op->in[0]], *b = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    EMU_CHECK(emu_is_int8_act(a->type) && emu_is_int8_act(b->type) && emu_is_int8_act(y->type));
    EMU_CHECK(a->scale > 0.0f && b->scale > 0.0f && y->scale > 0.0f);
    MatmulParams q = {0};
    if (op->n_in > 2) EMU_CHECK(emu_scalar_bool(m, op->in[2], &q.adj_x) == NEURON_NO_ERROR);
    if (op->n_in > 3) EMU_CHECK(emu_scalar_bool(m, op->in[3], &q.adj_y) == NEURON_NO_ERROR);
    EMU_TRY(matmul_shapes(a, b, y, &q));
    const float product = a->scale * b->scale; /* float32, as LiteRT's Prepare */
    const double real = (double)product / (double)y->scale;
    EMU_CHECK(emu_quantize_multiplier(real, num.rounding, &q.mult, &q.shift));
    q.z_l = a->zero_point;
    q.z_r = b->zero_point;
    q.z_out = y->zero_point;
    q.rounding = num.rounding;
    q.wrap = num.wrap;
    MatmulParams *p = malloc(sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    *p = q;
    *out = p;
    return NEURON_NO_ERROR;
}

/* One output row y[b, i, :] from matrices a (lhs of batch b) and c (rhs of batch b). */
static void matmul_row(const MatmulParams *p, const int8_t *a, const int8_t *c, size_t i,
                       int64_t *acc, int8_t *y) {
    const size_t m = p->m, k = p->k, n = p->n;
    for (size_t j = 0; j < n; j++) acc[j] = 0;
    for (size_t t = 0; t < k; t++) {
        const int64_t av = (int64_t)(p->adj_x ? a[t * m + i] : a[i * k + t]) - p->z_l;
        if (p->adj_y) {
            for (size_t j = 0; j < n; j++) acc[j] += av * ((int64_t)c[j * k + t] - p->z_r);
        } else {
            const int8_t *row = c + t * n;
            for (size_t j = 0; j < n; j++) acc[j] += av * ((int64_t)row[j] - p->z_r);
        }
    }
    for (size_t j = 0; j < n; j++) {
        const int64_t v = emu_mbqm_acc(acc[j], p->mult, p->shift, p->rounding, p->wrap);
        y[j] = (int8_t)emu_clamp(emu_add_offset(v, p->z_out, p->wrap), -128, 127);
    }
}

static size_t matmul_scratch(const void *params) {
    const MatmulParams *p = params;
    return p->n * sizeof(int64_t);
}

typedef struct {
    const MatmulParams *p;
    const int8_t *lhs, *rhs;
    int8_t *y;
} MatmulJob;

/* Output rows [begin, end) of the batch * m, each with this thread's n accumulators. */
static void matmul_rows(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const MatmulJob *j = ctx;
    const MatmulParams *p = j->p;
    const size_t m = p->m, k = p->k, n = p->n;
    for (size_t r = (size_t)begin; r < (size_t)end; r++) {
        const size_t b = r / m;
        const int8_t *a = j->lhs + (p->bl == 1 ? 0 : b) * m * k;
        const int8_t *c = j->rhs + (p->br == 1 ? 0 : b) * k * n;
        matmul_row(p, a, c, r % m, (int64_t *)scratch, j->y + r * n);
    }
}

static void matmul_eval(const void *params, const void *const *inputs, void *output,
                        EmuScratch *scratch) {
    const MatmulParams *p = params;
    const MatmulJob job = {p, inputs[0], inputs[1], output};
    emu_parallel_for(scratch, (int64_t)(p->batch * p->m), emu_par_grain(scratch, p->k * p->n),
                     matmul_rows, &job);
}

const EmuKernel emu_k_batch_matmul = {NEURON_BATCH_MATMUL, "BATCH_MATMUL", matmul_prepare,
                                      matmul_eval, matmul_scratch, free};
