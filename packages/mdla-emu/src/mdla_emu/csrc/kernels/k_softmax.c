/*
 * SOFTMAX, int8 (TFLite reference/softmax.h: gemmlowp fixed point; Prepare in activations.cc).
 *
 * Prepare:  (M, l) = QuantizeMultiplier(min(beta * s_in * 2^26, cap))   cap 2^31-1 (2^30-1 single)
 *           diff_min = -floor(31 * 2^26 / 2^l)                          (CalculateInputRadius)
 * Per row along `axis`, d_j = q_j - max q:
 *           z_j  = MBQM(d_j, M, l)                          Q5.26 scaled difference (<= 0)
 *           e_j  = exp_on_negative_values(z_j)              Q0.31
 *           S    = sum_{d_j >= diff_min} RDBPOT(e_j, 12)    Q12.19
 *           (R, b) = GetReciprocal(S)                        Newton-Raphson, Q0.31
 *           out_j = d_j >= diff_min ? clamp(RDBPOT(SRDHM(R, e_j), b + 23) - 128) : -128
 * Output parameters are fixed: scale 1/256, zero point -128. All in int64, as mdla_quant.
 * An int16 input runs softmax16.c's 16x8 kernel instead.
 */
#include "kernels.h"

typedef struct {
    uint64_t outer, len, inner; /* rows: outer x inner, each `len` long with stride `inner` */
    int64_t m;
    int left, rounding;
    int64_t diff_min;
    EmuSoftmax16 *wide; /* int16 activations (softmax16.c): every other field unused */
} SoftmaxParams;

static void softmax_release(void *params) {
    SoftmaxParams *p = params;
    if (p != NULL) free(p->wide);
    free(p);
}

static int64_t sat_shl(int64_t x, int e) {
    const int64_t v = x * (INT64_C(1) << e);
    return v < EMU_INT32_MIN ? EMU_INT32_MIN : (v > EMU_INT32_MAX ? EMU_INT32_MAX : v);
}

/* exp(a) for a in [-1/4, 0), Q0.31: Taylor series around -1/8 (gemmlowp). */
static int64_t exp_quarter(int64_t a) {
    const int64_t x = a + (INT64_C(1) << 28);
    const int64_t x2 = emu_srdhm(x, x), x3 = emu_srdhm(x2, x), x4 = emu_srdhm(x2, x2);
    const int64_t poly =
        emu_rdbpot(emu_srdhm(emu_rdbpot(x4, 2) + x3, 715827883) + x2, 1); /* x^4/24+x^3/6+x^2/2 */
    const int64_t c = 1895147668; /* exp(-1/8) */
    return c + emu_srdhm(c, x + poly);
}

/* exp(a) for a <= 0 in Q5.26, result Q0.31 (gemmlowp exp_on_negative_values). */
static int64_t exp_on_negative_values(int64_t a) {
    static const int64_t barrel[7][2] = {{-2, 1672461947}, {-1, 1302514674}, {0, 790015084},
                                         {1, 290630308},   {2, 39332535},    {3, 720401},
                                         {4, 242}};
    if (a == 0) return EMU_INT32_MAX;
    const int frac = 26;
    const int64_t quarter = INT64_C(1) << (frac - 2);
    const int64_t rem_quarter = (int64_t)((uint64_t)a & (uint64_t)(quarter - 1)) - quarter;
    int64_t result = exp_quarter(sat_shl(rem_quarter, 5));
    const int64_t whole = rem_quarter - a;
    for (int i = 0; i < 7; i++) {
        const int64_t bit = INT64_C(1) << (frac + barrel[i][0]);
        if ((uint64_t)whole & (uint64_t)bit) result = emu_srdhm(result, barrel[i][1]);
    }
    return result;
}

/* 1 / (1 + a) for a in [0, 1), Q0.31 in and out (3 Newton-Raphson steps in Q2.29). */
static int64_t one_over_one_plus_x(int64_t a) {
    const int64_t total = a + EMU_INT32_MAX;
    const int64_t sum = total + (total >= 0 ? 1 : -1);
    const int64_t half = sum >= 0 ? sum / 2 : -((-sum + 1) / 2); /* floor division */
    int64_t x = 1515870810 + emu_srdhm(half, -1010580540);
    for (int i = 0; i < 3; i++)
        x = x + sat_shl(emu_srdhm(x, (INT64_C(1) << 29) - emu_srdhm(half, x)), 2);
    return sat_shl(x, 1);
}

static int softmax_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num,
                           void **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    float beta = 1.0f;
    int32_t axis = -1;
    EMU_CHECK(emu_scalar_f32(m, op->in[1], &beta) == NEURON_NO_ERROR && beta > 0.0f);
    if (op->n_in > 2) EMU_CHECK(emu_scalar_i32(m, op->in[2], &axis) == NEURON_NO_ERROR);
    EMU_CHECK(x->rank >= 1 && axis >= -(int32_t)x->rank && axis < (int32_t)x->rank);
    EMU_CHECK(emu_dims_are(y, x->rank, x->dims));
    const uint32_t ax = (uint32_t)(axis < 0 ? axis + (int32_t)x->rank : axis);
    SoftmaxParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    if (x->type == NEURON_TENSOR_QUANT16_SYMM) {
        const int rc = emu_softmax16_prepare(m, op, beta, ax, num.rounding, &p->wide);
        if (rc != NEURON_NO_ERROR) free(p);
        *out = rc == NEURON_NO_ERROR ? p : NULL;
        return rc;
    }
    if (!(y->scale == 1.0f / 256.0f && y->zero_point == -128)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    p->outer = p->inner = 1;
    for (uint32_t i = 0; i < ax; i++) p->outer *= x->dims[i];
    for (uint32_t i = ax + 1; i < x->rank; i++) p->inner *= x->dims[i];
    p->len = x->dims[ax];
    const double cap = num.rounding == EMU_ROUND_SINGLE ? 1073741823.0 : 2147483647.0;
    double real = (double)beta * (double)x->scale * 67108864.0;
    if (real > cap) real = cap;
    if (!emu_quantize_multiplier(real, num.rounding, &p->m, &p->left)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    p->diff_min = -(int64_t)floor(31.0 * 67108864.0 / ldexp(1.0, p->left));
    p->rounding = num.rounding;
    *out = p;
    return NEURON_NO_ERROR;
}

/* Softmax of one lane: the `len` values `inner` apart from `row`, into the same places of dst. */
static void softmax_lane(const SoftmaxParams *p, const int8_t *row, int8_t *dst) {
    int32_t max = -128;
    for (uint64_t j = 0; j < p->len; j++)
        if (row[j * p->inner] > max) max = row[j * p->inner];
    int64_t total = 0;
    for (uint64_t j = 0; j < p->len; j++) {
        const int64_t d = row[j * p->inner] - max;
        if (d >= p->diff_min)
            total += emu_rdbpot(exp_on_negative_values(emu_mbqm(d, p->m, p->left, p->rounding)),
                                12);
    }
    int clz = 0; /* leading zeros of S as a 32-bit value (S >= 1: the max's term) */
    while (clz < 32 && !((uint64_t)total & (UINT64_C(1) << (31 - clz)))) clz++;
    const int64_t shifted =
        (int64_t)(((uint64_t)total << clz) & UINT64_C(0xFFFFFFFF)) - (INT64_C(1) << 31);
    const int64_t recip = one_over_one_plus_x(shifted);
    const int bits = 12 - clz;
    for (uint64_t j = 0; j < p->len; j++) {
        const int64_t d = row[j * p->inner] - max;
        int64_t v = -128;
        if (d >= p->diff_min) {
            const int64_t e = exp_on_negative_values(emu_mbqm(d, p->m, p->left, p->rounding));
            v = emu_rdbpot(emu_srdhm(recip, e), bits + 31 - 8) - 128;
        }
        dst[j * p->inner] = (int8_t)emu_clamp(v, -128, 127);
    }
}

typedef struct {
    const SoftmaxParams *p;
    const int8_t *x;
    int8_t *y;
} SoftmaxJob;

/* Lanes [begin, end) of the outer * inner: lane o * inner + i starts at o * len * inner + i. */
static void softmax_lanes(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const SoftmaxJob *j = ctx;
    const SoftmaxParams *p = j->p;
    for (uint64_t r = (uint64_t)begin; r < (uint64_t)end; r++) {
        const uint64_t at = r / p->inner * p->len * p->inner + r % p->inner;
        softmax_lane(p, j->x + at, j->y + at);
    }
}

static void softmax_eval(const void *params, const void *const *inputs, void *output,
                         EmuScratch *scratch) {
    const SoftmaxParams *p = params;
    if (p->wide != NULL) {
        emu_softmax16_eval(p->wide, inputs[0], output);
        return;
    }
    const SoftmaxJob job = {p, inputs[0], output};
    const int64_t lane_work = (int64_t)p->len * EMU_WORK_EXP;
    emu_parallel_for(scratch, (int64_t)(p->outer * p->inner), emu_par_grain(scratch, lane_work),
                     softmax_lanes, &job);
}

const EmuKernel emu_k_softmax = {NEURON_SOFTMAX, "SOFTMAX", softmax_prepare, softmax_eval, NULL,
                                 softmax_release};
