/*
 * ADD and SUB, int8 with numpy broadcasting (TFLite reference_integer_ops/add.h, sub.cc).
 *
 * Prepare (double, from float32 scales), left_shift = 20:
 *     twice = 2 * max(s1, s2)
 *     (M1, e1) = QM(s1 / twice),  (M2, e2) = QM(s2 / twice)          both <= 0.5: e <= 0
 *     (Mo, eo) = QM(twice / (2^20 * s_out))
 * Eval:
 *     a = MBQM((x1 - z1) * 2^20, M1, e1);  b = MBQM((x2 - z2) * 2^20, M2, e2)
 *     out = clamp(MBQM(a +- b, Mo, eo) + z_out, act_min, act_max)
 * out depends on the two int8 codes only, so prepare freezes it: into simd.h's EmuAddVec (the
 * codes' a and +-b as byte planes, simd_add.c) when emu_add_vec_ready() and it packs, on aarch64
 * into simd_neon.h's EmuAddNeon (the formula in NEON lanes, simd_add_neon.c) when it packs, else
 * into a 256 x 256 table.
 * |x - z| <= 255: (x - z) * 2^20 < 2^28 and a +- b < 2^29, within int32.
 *
 * 16x8 (int16 operands, TENSOR_QUANT16_SYMM, zero points 0; TFLite add.cc with
 * pot_scale_int16 = false): the same formula with left_shift = 15, computed per element, the
 * clamp CalculateActivationRangeQuantized over [-32768, 32767]. |x| <= 2^15: x * 2^15 <= 2^30.
 */
#include "kernels.h"
#include "simd.h"
#include "simd_neon.h"

/* The 16x8 form's frozen multipliers. */
typedef struct {
    int64_t m1, m2, mo;
    int e1, e2, eo, sign, rounding;
    int32_t lo, hi;
    bool wrap;
} Add16;

typedef struct {
    EmuBroadcast bc;
    bool wide; /* int16: `w` holds the arithmetic, `out` is unused */
    Add16 w;
    int8_t out[256][256]; /* indexed by (code1 + 128, code2 + 128) */
    bool vec;             /* `v` computes `out`'s codes (simd.h emu_add_vec) */
    EmuAddVec v;
    bool neon; /* `n` computes them (simd_neon.h emu_add_neon) */
    EmuAddNeon n;
} AddParams;

static int add16_prepare(const EmuOperand *x1, const EmuOperand *x2, const EmuOperand *y,
                         int32_t fuse, EmuNumerics num, int sign, AddParams *p) {
    EMU_CHECK(x1->type == NEURON_TENSOR_QUANT16_SYMM && x2->type == NEURON_TENSOR_QUANT16_SYMM);
    EMU_CHECK(x1->zero_point == 0 && x2->zero_point == 0 && y->zero_point == 0);
    Add16 *w = &p->w;
    const double s1 = x1->scale, s2 = x2->scale;
    const double twice = 2.0 * (s1 > s2 ? s1 : s2);
    EMU_CHECK(emu_quantize_multiplier(s1 / twice, num.rounding, &w->m1, &w->e1) &&
              emu_quantize_multiplier(s2 / twice, num.rounding, &w->m2, &w->e2) &&
              emu_quantize_multiplier(twice / (32768.0 * (double)y->scale), num.rounding,
                                      &w->mo, &w->eo));
    w->sign = sign;
    w->rounding = num.rounding;
    w->wrap = num.wrap;
    emu_activation_range16(fuse, y->scale, &w->lo, &w->hi);
    p->wide = true;
    return NEURON_NO_ERROR;
}

static int add_sub_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, int sign,
                           void **out) {
    *out = NULL;
    const EmuOperand *x1 = &m->opnds[op->in[0]], *x2 = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    int32_t fuse = 0;
    EMU_CHECK(emu_scalar_i32(m, op->in[2], &fuse) == NEURON_NO_ERROR && fuse >= 0 && fuse <= 3);
    const bool wide = y->type == NEURON_TENSOR_QUANT16_SYMM;
    EMU_CHECK(wide || emu_is_int8_act(y->type));
    AddParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    if (emu_broadcast_prepare(x1, x2, y, &p->bc) != NEURON_NO_ERROR ||
        (wide && add16_prepare(x1, x2, y, fuse, num, sign, p) != NEURON_NO_ERROR)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    if (wide) {
        *out = p;
        return NEURON_NO_ERROR;
    }
    const double s1 = x1->scale, s2 = x2->scale;
    const double twice = 2.0 * (s1 > s2 ? s1 : s2);
    int64_t m1, m2, mo, a[256], b[256]; /* a, b indexed by code + 128 */
    int e1, e2, eo;
    if (!emu_quantize_multiplier(s1 / twice, num.rounding, &m1, &e1) ||
        !emu_quantize_multiplier(s2 / twice, num.rounding, &m2, &e2) ||
        !emu_quantize_multiplier(twice / (1048576.0 * (double)y->scale), num.rounding, &mo, &eo)) {
        free(p);
        return NEURON_BAD_DATA;
    }
    for (int q = -128; q < 128; q++) {
        a[q + 128] = emu_mbqm((int64_t)(q - x1->zero_point) * 1048576, m1, e1, num.rounding);
        b[q + 128] = emu_mbqm((int64_t)(q - x2->zero_point) * 1048576, m2, e2, num.rounding);
    }
    int32_t lo, hi;
    emu_activation_range(fuse, y->scale, y->zero_point, &lo, &hi);
    const bool wrap = num.wrap; /* only the output multiplier can exceed 1 */
    p->vec = emu_add_vec_ready() &&
             emu_add_vec_pack(&p->v, a, b, sign, mo, eo, num.rounding, y->zero_point, lo, hi);
    if (!p->vec && emu_isa() == EMU_ISA_NEON) {
        const int64_t ms[3] = {m1, m2, mo};
        const int ss[3] = {e1, e2, eo};
        const int32_t zs[2] = {x1->zero_point, x2->zero_point};
        p->neon = emu_add_neon_pack(&p->n, ms, ss, zs, sign, num.rounding, y->zero_point, lo, hi);
    }
    for (int i = 0; i < 256 && !p->vec && !p->neon; i++) /* add_run's table: no `v`, no `n` */
        for (int j = 0; j < 256; j++) {
            const int64_t raw = sign > 0 ? a[i] + b[j] : a[i] - b[j];
            const int64_t h = emu_mbqm_acc(raw, mo, eo, num.rounding, wrap);
            p->out[i][j] = (int8_t)emu_clamp(emu_add_offset(h, y->zero_point, wrap), lo, hi);
        }
    *out = p;
    return NEURON_NO_ERROR;
}

static int add_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    return add_sub_prepare(m, op, num, 1, out);
}

static int sub_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    return add_sub_prepare(m, op, num, -1, out);
}

static void add_run(const void *ctx, const int8_t *a, const int8_t *b, int8_t *out,
                    uint32_t count, uint32_t a_step, uint32_t b_step) {
    const AddParams *p = ctx;
    if (p->vec) {
        emu_add_vec(&p->v, a, b, a_step, b_step, count, out);
        return;
    }
    if (p->neon) {
        emu_add_neon(&p->n, a, b, a_step, b_step, count, out);
        return;
    }
    for (uint32_t i = 0; i < count; i++) out[i] = p->out[a[i * a_step] + 128][b[i * b_step] + 128];
}

/* The 16x8 run: the broadcast hands it int16 runs (bc.elem = 2). */
static void add16_run(const void *ctx, const int8_t *a, const int8_t *b, int8_t *out,
                      uint32_t count, uint32_t a_step, uint32_t b_step) {
    const Add16 *w = ctx;
    const int16_t *x1 = (const int16_t *)(const void *)a, *x2 = (const int16_t *)(const void *)b;
    int16_t *y = (int16_t *)(void *)out;
    for (uint32_t i = 0; i < count; i++) {
        const int64_t u = emu_mbqm((int64_t)x1[i * a_step] * 32768, w->m1, w->e1, w->rounding);
        const int64_t v = emu_mbqm((int64_t)x2[i * b_step] * 32768, w->m2, w->e2, w->rounding);
        const int64_t h = emu_mbqm_acc(w->sign > 0 ? u + v : u - v, w->mo, w->eo, w->rounding,
                                       w->wrap);
        y[i] = (int16_t)emu_clamp(h, w->lo, w->hi);
    }
}

static void add_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    const AddParams *p = params;
    if (p->wide)
        emu_broadcast_run(&p->bc, scratch, EMU_WORK_WIDE, &p->w, inputs[0], inputs[1], output,
                          add16_run);
    else
        emu_broadcast_run(&p->bc, scratch, EMU_WORK_TABLE2, p, inputs[0], inputs[1], output,
                          add_run);
}

const EmuKernel emu_k_add = {NEURON_ADD, "ADD", add_prepare, add_eval, NULL, free};
const EmuKernel emu_k_sub = {NEURON_SUB, "SUB", sub_prepare, add_eval, NULL, free};
