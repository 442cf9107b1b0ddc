/*
 * MUL, int8 with numpy broadcasting (TFLite reference_integer_ops/mul.h).
 *
 *     (M, s) = QuantizeMultiplier(s1 * s2 / s_out)            in float32, widened to double
 * (LiteRT's mul.cc evaluates `in1->scale * in2->scale / out->scale` in float32.)
 *     out = clamp(MBQM((x1 - z1) * (x2 - z2), M, s) + z_out, act_min, act_max)
 * |x - z| <= 255, so the product is below 2^16 and x * 2^s stays within int32 for s <= 15;
 * beyond, the target's accumulator fact wraps or saturates it (arith.h).
 *
 * The output depends on the two int8 codes alone, so prepare evaluates the formula above once
 * for each of the 256 x 256 pairs (mul_one) and eval reads table[x1 + 128][x2 + 128]: the same
 * values by construction, without the int64 requantization per element. Above
 * EMU_ISA_PORTABLE (simd.h, chosen at prepare), double rounding with s <= 0 runs the formula
 * itself in vector lanes instead (emu_mul_narrow_*: why it is the same integers is there).
 *
 * SiLU as the graph writes it, MUL(x, LOGISTIC(x)) with the LOGISTIC in the same model, of
 * same-shape int8 operands: the product is then a function of x's code alone, so prepare
 * evaluates mul_one on each code and LOGISTIC's table of it (emu_act_table, the same bytes the
 * LOGISTIC writes) and eval is a 256-entry lookup of x (emu_lut_eval), the sigmoid unread
 * (emu_mul_silu_x says so: a LOGISTIC nothing else reads is then not run, abi/plan.c).
 *
 * The squeeze-excite gate, x [n, hw, c] times g [n, 1, c] (broadcast.c's collapsed dims, either
 * operand the gate; int8): the broadcast would hand the run function one run of c per pixel.
 * Eval instead walks each batch's hw * c codes of x in pieces of GATE_PIECE, reading g from a
 * pattern of its codes repeated in scratch (pattern[j] = g[j % c], c + GATE_PIECE bytes), so each
 * piece is one run of whole vectors; every element is still the run's value for its two codes.
 *
 * 16x8 (int16 operands, TENSOR_QUANT16_SYMM, zero points 0): the same multiplier, per element
 * out = clamp(MBQM(x1 * x2, M, s), act_min, act_max) over [-32768, 32767]; |x1 x2| <= 2^30.
 */
#include <string.h>

#include "kernels.h"
#include "simd.h"
#include "simd_neon.h"

#define GATE_PIECE 4096

/* The gate of the header: n batches of hw pixels of c channels, g the gate's input (0 or 1). */
typedef struct {
    uint64_t n, hw, c;
    int g;
} MulGate;

typedef struct {
    EmuBroadcast bc;
    int64_t m;
    int s, rounding;
    bool wrap; /* the accumulator fact: x * 2^s leaves int32 for s > 15 */
    int32_t z1, z2, z_out, lo, hi;
    int8_t *table; /* [256][256]: mul_one of every pair of codes (NULL above portable) */
    int isa;        /* emu_isa() when the formula is narrow (double, s <= 0), else portable */
    EmuMulNarrow nk;
    bool wide; /* int16 (16x8): per element, table and isa unused */
    EmuLut *silu; /* MUL(x, LOGISTIC(x)): out = silu->table[x + 128], or NULL */
    int silu_x;   /* which input x is (0 or 1) */
    MulGate gate; /* gate.c == 0: not the gate's shape */
} MulParams;

/* The formula of the header for one pair of codes. */
static int8_t mul_one(const MulParams *p, int32_t a, int32_t b) {
    const int64_t prod = (int64_t)(a - p->z1) * (b - p->z2);
    const int64_t h = emu_mbqm_acc(prod, p->m, p->s, p->rounding, p->wrap);
    return (int8_t)emu_clamp(emu_add_offset(h, p->z_out, p->wrap), p->lo, p->hi);
}

static void mul_free(void *params) {
    MulParams *p = params;
    if (p != NULL) free(p->table), free(p->silu);
    free(p);
}

/* Which input of `op` (0 or 1) is x when the other is LOGISTIC(x), an int8 LOGISTIC of this
 * model with every shape equal; -1 otherwise. */
static int silu_input(const NeuronModel *m, const EmuOperation *op) {
    const EmuOperand *y = &m->opnds[op->out[0]];
    for (uint32_t i = 0; i < m->n_ops; i++) {
        const EmuOperation *l = &m->ops[i];
        if (l->code != NEURON_LOGISTIC || l->n_in < 1 || l->n_out < 1) continue;
        const EmuOperand *s = &m->opnds[l->out[0]];
        for (int k = 0; k < 2; k++) {
            const EmuOperand *x = &m->opnds[op->in[k]];
            if (l->out[0] == op->in[1 - k] && l->in[0] == op->in[k] && emu_is_int8_act(x->type) &&
                emu_is_int8_act(s->type) && s->scale == 1.0f / 256.0f && s->zero_point == -128 &&
                emu_dims_are(x, y->rank, y->dims) && emu_dims_are(s, y->rank, y->dims))
                return k;
        }
    }
    return -1;
}

/* The SiLU table of the header when `op` is one (p->silu stays NULL otherwise). */
static int silu_prepare(const NeuronModel *m, const EmuOperation *op, MulParams *p) {
    const int k = silu_input(m, op);
    if (k < 0) return NEURON_NO_ERROR;
    const EmuOperand *x = &m->opnds[op->in[k]], *s = &m->opnds[op->in[1 - k]];
    int8_t sig[256];
    emu_act_table(x, s, true, sig);
    const int rc = emu_lut_alloc(m, op, &p->silu);
    if (rc != NEURON_NO_ERROR) return rc;
    for (int32_t q = -128; q < 128; q++) {
        const int32_t g = sig[q + 128];
        p->silu->table[q + 128] = k == 0 ? mul_one(p, q, g) : mul_one(p, g, q);
    }
    p->silu_x = k;
    return NEURON_NO_ERROR;
}

/* The gate's shape in the collapsed broadcast: the inner dim c walked by both operands, the
 * next (hw) by x alone, and at most one more (the batch) with x's and the gate's strides
 * continuing theirs. false otherwise. */
static bool gate_shape(const EmuBroadcast *bc, MulGate *gt) {
    const int r = EMU_MAX_RANK;
    const uint64_t c = bc->dims[r - 1], sa = bc->stride_a[r - 2], sb = bc->stride_b[r - 2];
    if (bc->elem != 1 || bc->stride_a[r - 1] != 1 || bc->stride_b[r - 1] != 1) return false;
    if (!((sa == c && sb == 0) || (sa == 0 && sb == c))) return false;
    const int g = sa == 0 ? 0 : 1;
    const uint64_t hw = bc->dims[r - 2];
    uint64_t n = 1;
    for (int i = 0; i < r - 2; i++) {
        if (bc->dims[i] == 1) continue;
        const uint64_t sx = g ? bc->stride_a[i] : bc->stride_b[i];
        const uint64_t sg = g ? bc->stride_b[i] : bc->stride_a[i];
        if (i != r - 3 || sx != c * hw || sg != c) return false;
        n = bc->dims[i];
    }
    *gt = (MulGate){n, hw, c, g};
    return true;
}

int emu_mul_silu_x(const void *params) {
    const MulParams *p = params;
    return p != NULL && p->silu != NULL ? p->silu_x : -1;
}

static int mul_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    *out = NULL;
    const EmuOperand *x1 = &m->opnds[op->in[0]], *x2 = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    int32_t fuse = 0;
    EMU_CHECK(emu_scalar_i32(m, op->in[2], &fuse) == NEURON_NO_ERROR && fuse >= 0 && fuse <= 3);
    const bool wide = y->type == NEURON_TENSOR_QUANT16_SYMM;
    EMU_CHECK(wide ? (x1->type == y->type && x2->type == y->type && x1->zero_point == 0 &&
                      x2->zero_point == 0 && y->zero_point == 0)
                   : emu_is_int8_act(y->type));
    MulParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    if (emu_broadcast_prepare(x1, x2, y, &p->bc) != NEURON_NO_ERROR) {
        free(p);
        return NEURON_BAD_DATA;
    }
    const float real = x1->scale * x2->scale / y->scale; /* float32, as LiteRT's Prepare */
    if (!emu_quantize_multiplier((double)real, num.rounding, &p->m, &p->s)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    p->rounding = num.rounding;
    p->wrap = num.wrap;
    p->z1 = x1->zero_point;
    p->z2 = x2->zero_point;
    p->z_out = y->zero_point;
    p->wide = wide;
    if (wide) {
        emu_activation_range16(fuse, y->scale, &p->lo, &p->hi);
        p->isa = EMU_ISA_PORTABLE;
        *out = p;
        return NEURON_NO_ERROR;
    }
    emu_activation_range(fuse, y->scale, y->zero_point, &p->lo, &p->hi);
    const int rc = silu_prepare(m, op, p);
    if (rc != NEURON_NO_ERROR || p->silu != NULL) {
        if (rc != NEURON_NO_ERROR) mul_free(p);
        *out = rc == NEURON_NO_ERROR ? p : NULL;
        return rc;
    }
    p->isa = num.rounding == EMU_ROUND_DOUBLE && p->s <= 0 ? emu_isa() : EMU_ISA_PORTABLE;
    if (!gate_shape(&p->bc, &p->gate)) p->gate.c = 0;
    if (p->isa != EMU_ISA_PORTABLE) { /* mul_run never reads the table: no 64K evaluations */
        /* narrow only: s <= 0 here, so the right shift -s and its mask are defined */
        p->nk = (EmuMulNarrow){p->z1, p->z2, (int32_t)p->m, -p->s,
                               (int32_t)((INT64_C(1) << -p->s) - 1), p->z_out, p->lo, p->hi};
        *out = p;
        return NEURON_NO_ERROR;
    }
    p->table = malloc(256 * 256);
    if (p->table == NULL) {
        free(p);
        return NEURON_OUT_OF_MEMORY;
    }
    for (int32_t a = -128; a < 128; a++)
        for (int32_t b = -128; b < 128; b++)
            p->table[(a + 128) * 256 + (b + 128)] = mul_one(p, a, b);
    *out = p;
    return NEURON_NO_ERROR;
}

static void mul_run(const void *ctx, const int8_t *a, const int8_t *b, int8_t *out,
                    uint32_t count, uint32_t a_step, uint32_t b_step) {
    const MulParams *p = ctx;
    if (p->isa != EMU_ISA_PORTABLE) { /* steps are 0 or 1 (emu_broadcast_prepare) */
        if (p->isa == EMU_ISA_AVX512)
            emu_mul_narrow_avx512(&p->nk, a, b, a_step, b_step, count, out);
        else if (p->isa == EMU_ISA_NEON)
            emu_mul_narrow_neon(&p->nk, a, b, a_step, b_step, count, out);
        else
            emu_mul_narrow_avx2(&p->nk, a, b, a_step, b_step, count, out);
        return;
    }
    const int8_t *restrict table = p->table;
    for (uint32_t i = 0; i < count; i++)
        out[i] = table[(a[i * a_step] + 128) * 256 + (b[i * b_step] + 128)];
}

/* The 16x8 run: the broadcast hands it int16 runs (bc.elem = 2). */
static void mul16_run(const void *ctx, const int8_t *a, const int8_t *b, int8_t *out,
                      uint32_t count, uint32_t a_step, uint32_t b_step) {
    const MulParams *p = ctx;
    const int16_t *x1 = (const int16_t *)(const void *)a, *x2 = (const int16_t *)(const void *)b;
    int16_t *y = (int16_t *)(void *)out;
    for (uint32_t i = 0; i < count; i++) {
        const int64_t prod = (int64_t)x1[i * a_step] * x2[i * b_step];
        y[i] = (int16_t)emu_clamp(emu_mbqm_acc(prod, p->m, p->s, p->rounding, p->wrap), p->lo,
                                  p->hi);
    }
}

typedef struct {
    const MulParams *p;
    const int8_t *x, *g;
    int8_t *out;
    int64_t pieces; /* per batch */
} GateJob;

/* pattern[j] = g[j % c] for j < c + GATE_PIECE, by doubling copies. */
static void gate_pattern(int8_t *pattern, const int8_t *g, uint64_t c) {
    const uint64_t total = c + GATE_PIECE;
    memcpy(pattern, g, c);
    for (uint64_t have = c; have < total; have *= 2)
        memcpy(pattern + have, pattern, have < total - have ? have : total - have);
}

/* Pieces [begin, end) of the gate's batches (the header), GATE_PIECE codes of x each. */
static void gate_pieces(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const GateJob *j = ctx;
    const MulGate *gt = &j->p->gate;
    const uint64_t per = gt->hw * gt->c;
    int8_t *pattern = (int8_t *)scratch;
    int64_t built = -1;
    for (int64_t k = begin; k < end; k++) {
        const int64_t batch = k / j->pieces;
        const uint64_t at = (uint64_t)(k % j->pieces) * GATE_PIECE;
        if (batch != built) gate_pattern(pattern, j->g + (uint64_t)batch * gt->c, gt->c);
        built = batch;
        const uint32_t len = (uint32_t)(per - at < GATE_PIECE ? per - at : GATE_PIECE);
        const int8_t *x = j->x + (uint64_t)batch * per + at, *g = pattern + at % gt->c;
        int8_t *out = j->out + (uint64_t)batch * per + at;
        if (gt->g == 1)
            mul_run(j->p, x, g, out, len, 1, 1);
        else
            mul_run(j->p, g, x, out, len, 1, 1);
    }
}

static size_t mul_scratch(const void *params) {
    const MulParams *p = params;
    return p->gate.c ? (size_t)p->gate.c + GATE_PIECE : 0;
}

static void mul_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    const MulParams *p = params;
    const int64_t lanes = p->isa == EMU_ISA_PORTABLE ? EMU_WORK_TABLE2 : EMU_WORK_LANES;
    if (p->gate.c) {
        const MulGate *gt = &p->gate;
        const int64_t pieces = (int64_t)((gt->hw * gt->c + GATE_PIECE - 1) / GATE_PIECE);
        const GateJob job = {p, inputs[1 - gt->g], inputs[gt->g], output, pieces};
        emu_parallel_for(scratch, (int64_t)gt->n * pieces,
                         emu_par_grain(scratch, GATE_PIECE * lanes), gate_pieces, &job);
        return;
    }
    if (p->silu != NULL) {
        const void *x[1] = {inputs[p->silu_x]};
        emu_lut_eval(p->silu, x, output, scratch);
        return;
    }
    const int64_t work = p->wide ? EMU_WORK_WIDE : lanes;
    emu_broadcast_run(&p->bc, scratch, work, p, inputs[0], inputs[1], output,
                      p->wide ? mul16_run : mul_run);
}

const EmuKernel emu_k_mul = {NEURON_MUL, "MUL", mul_prepare, mul_eval, mul_scratch, mul_free};
