/*
 * cpu_part.c: the engine's in-process cpu device (see cpu_part.h).
 *
 * The emulator's kernels take its model structs (emu.h: EmuOperand, EmuOperation inside a
 * NeuronModel). They are filled here straight from the manifest, one EmuOperand per manifest
 * operand with the same index, constants pointing into the manifest's data; each kernel's
 * prepare then runs the same validation it runs inside libneuron_emu.so, and eval the same
 * loops, so a cpu partition's int8 op computes what the emulator (and run_int8) computes.
 */
#include "cpu_part.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptive_pool.h"
#include "arith.h"
#include "cpu_split.h"
#include "max_pool_3d.h"
#include "select.h"
#include "float_ops.h"
#include "gru.h"
#include "kernels.h"
#include "mdla_ops.h"


enum {
    STEP_KERNEL,
    STEP_LAYER_NORM,
    STEP_TABLE,
    STEP_ARGMAX,
    STEP_DEQUANTIZE,
    STEP_GRU,
    STEP_FC_F32,
    STEP_CONCAT_F32,
    STEP_GROUP_NORM,
    STEP_ADAPTIVE_AVG,
    STEP_MAX_POOL_3D,
    STEP_SELECT
};

typedef struct {
    int kind;
    uint32_t op; /* manifest operation index */
    const EmuKernel *kernel;
    void *params; /* the kernel's frozen params */
    /* LAYER_NORM */
    size_t rows, n;
    float *w, *b, eps, s_in, s_out;
    int32_t z_in, z_out;
    /* the table group (GELU, ELU, EXP, ...) */
    int8_t table[256];
    size_t count;
    /* ARGMAX: x as [outer, classes, inner] */
    size_t outer, classes, inner;
    /* float32 region (gru.h): DEQUANTIZE (count, s_in, z_in); GRU x (steps, in) -> (steps,
     * dirs * hidden), w = w_ih, b = b_ih; FULLY_CONNECTED_F32 steps rows of in -> hidden */
    size_t steps, in, hidden, dirs;
    float *w_hh, *b_hh;
    /* CONCATENATION_F32: count inputs, each `runs[k]` floats per outer index (outer) */
    size_t *runs;
    /* GROUP_NORM: x as shape (batch, outer, classes, inner), classes in `groups` runs; w, b,
     * eps, s_in, z_in, s_out, z_out as LAYER_NORM's */
    size_t shape[4], groups;
    /* ADAPTIVE_AVG_POOL_2D: x [n, h, w, c] -> y [n, oh, ow, c] (pool[0..5]) */
    size_t pool[6];
    bool pool_max; /* ADAPTIVE_MAX_POOL_2D */
    /* MAX_POOL_3D: in (n t h w c), out (t h w), kernel, stride, padding (t h w) */
    size_t p3_in[5], p3_out[3], p3_k[3], p3_s[3], p3_p[3];
    /* SELECT: x, y params (s_in, z_in; s_out, z_out), compare, a's table (table), b's */
    int compare;
    int8_t table_b[256];
} step;

struct mdla_cpu_part {
    const mdla_manifest *m;
    NeuronModel model; /* opnds: every manifest operand; ops: this partition's, in order */
    step *steps;
    uint32_t n_steps;
    uint8_t *scratch;  /* scratch_len bytes per thread (LAYER_NORM's float row included) */
    size_t scratch_len;
    EmuPool *pool;     /* the engine's MDLA_CPU_THREADS - 1 workers (shared); NULL: one thread */
    float *gru; /* GRU's scratch (mdla_cpu_gru_scratch) */
    size_t gru_len;
    const void **args;
    uint32_t max_args;
};

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static bool failf(mdla_cpu_error *err, int status, long op, const char *fmt, ...) {
    err->op = op;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->why, sizeof err->why, fmt, ap);
    va_end(ap);
    return false;
}

static const char *host_name(int32_t code) {
    return code >= 0 && mdla_host_op((uint64_t)code) ? mdla_host_op_name((uint64_t)code) : NULL;
}

/* One EmuOperand per manifest operand (the kernels index the model's operands by the op's). */
static bool fill_operands(mdla_cpu_part *cp, mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    cp->model.opnds = calloc(m->n_operands ? m->n_operands : 1, sizeof *cp->model.opnds);
    if (!cp->model.opnds) return failf(err, 4, -1, "out of memory");
    cp->model.n_opnds = cp->model.cap_opnds = m->n_operands;
    for (uint32_t i = 0; i < m->n_operands; i++) {
        const mdla_operand *o = &m->operands[i];
        EmuOperand *e = &cp->model.opnds[i];
        e->type = o->type;
        e->rank = o->rank > EMU_MAX_RANK ? EMU_MAX_RANK + 1 : o->rank; /* kernels refuse it */
        for (uint32_t d = 0; d < o->rank && d < EMU_MAX_RANK; d++) e->dims[d] = o->dims[d];
        e->scale = o->scale;
        e->zero_point = o->zero_point;
        if (o->per_channel) {
            e->channel_dim = o->channel_dim;
            e->channel_count = o->n_scales;
            e->channel_scales = o->scales; /* the manifest's: never freed here */
            e->scale = 0.0f;
            e->zero_point = 0;
        }
        e->lifetime = EMU_TEMP;
        if (o->has_value) {
            e->lifetime = EMU_CONST;
            e->has_value = true;
            e->value = o->type == NEURON_INT32 ? (const void *)&o->i32
                       : o->type == NEURON_FLOAT32 ? (const void *)&o->f32
                                                   : (const void *)&o->b8;
            e->value_len = emu_type_size(o->type);
        } else if (o->has_data) {
            e->lifetime = EMU_CONST;
            e->has_value = true;
            e->value = o->data;
            e->value_len = (size_t)o->data_len;
        }
    }
    return true;
}

static bool same_dims(const mdla_operand *a, const mdla_operand *b) {
    if (a->rank != b->rank) return false;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

static bool is_int8(const mdla_operand *o) {
    return o->type == NEURON_TENSOR_QUANT8_ASYMM_SIGNED && !o->per_channel && !o->has_data &&
           !o->has_value;
}

/* A float32 vector of n values from a TENSOR_FLOAT32 constant (copied: the manifest's data is
 * 64-byte aligned per tensor, but the copy makes no assumption). */
static float *float_vector(const mdla_operand *o, size_t n) {
    if (o->type != NEURON_TENSOR_FLOAT32 || !o->has_data || o->rank != 1 || o->dims[0] != n ||
        o->data_len != n * sizeof(float))
        return NULL;
    float *v = malloc(n ? n * sizeof *v : 1);
    if (v) memcpy(v, o->data, n * sizeof *v);
    return v;
}

/* A float32 activation (a float region's tensor: no data, no quantization). */
static bool is_f32(const mdla_operand *o) {
    return o->type == NEURON_TENSOR_FLOAT32 && !o->per_channel && !o->has_data && !o->has_value;
}

/* A TENSOR_FLOAT32 constant of dims `d` (rank n), copied. */
static float *float_const(const mdla_operand *o, uint32_t n, const uint32_t *d) {
    uint64_t count = 1;
    bool ok = o->type == NEURON_TENSOR_FLOAT32 && o->has_data && o->rank == n;
    for (uint32_t k = 0; ok && k < n; k++) {
        ok = o->dims[k] == d[k];
        count *= d[k];
    }
    if (!ok || o->data_len != count * sizeof(float)) return NULL;
    float *v = malloc(count ? (size_t)count * sizeof *v : 1);
    if (v) memcpy(v, o->data, (size_t)count * sizeof *v);
    return v;
}

static bool prepare_dequantize(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                               mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 1 || op->n_outputs != 1)
        return failf(err, 1, i, "DEQUANTIZE wants 1 input and 1 output");
    const mdla_operand *x = &m->operands[op->inputs[0]], *y = &m->operands[op->outputs[0]];
    if (!is_int8(x) || !is_f32(y) || !same_dims(x, y))
        return failf(err, 1, i, "DEQUANTIZE wants an int8 x and a float32 y of one shape");
    s->count = (size_t)x->elements;
    s->s_in = x->scale;
    s->z_in = x->zero_point;
    return true;
}

/* GRU x w_ih w_hh b_ih b_hh bidirectional -> y: x (T, I), w_ih [D, 3H, I], w_hh [D, 3H, H],
 * biases [D, 3H], y (T, D * H); D = 2 when bidirectional. */
static bool prepare_gru(mdla_cpu_part *cp, const mdla_operation *op, step *s,
                        mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 6 || op->n_outputs != 1)
        return failf(err, 1, i, "GRU wants 6 inputs and 1 output");
    const mdla_operand *x = &m->operands[op->inputs[0]], *wh = &m->operands[op->inputs[2]];
    const mdla_operand *bi = &m->operands[op->inputs[5]], *y = &m->operands[op->outputs[0]];
    if (!is_f32(x) || !is_f32(y) || x->rank != 2 || y->rank != 2)
        return failf(err, 1, i, "GRU wants float32 x (T, I) and y (T, D*H)");
    if (bi->type != NEURON_BOOL || !bi->has_value)
        return failf(err, 1, i, "GRU's bidirectional flag is not a BOOL scalar");
    s->dirs = bi->b8 ? 2 : 1;
    if (wh->rank != 3 || wh->dims[0] != s->dirs || wh->dims[2] == 0 || wh->dims[1] != 3 * wh->dims[2])
        return failf(err, 1, i, "GRU's w_hh is not [%zu, 3H, H]", s->dirs);
    s->steps = x->dims[0];
    s->in = x->dims[1];
    s->hidden = wh->dims[2];
    if (y->dims[0] != s->steps || y->dims[1] != s->dirs * s->hidden)
        return failf(err, 1, i, "GRU's y is not (%zu, %zu)", s->steps, s->dirs * s->hidden);
    const uint32_t d = (uint32_t)s->dirs, g = (uint32_t)(3 * s->hidden);
    const uint32_t d_ih[3] = {d, g, (uint32_t)s->in}, d_hh[3] = {d, g, (uint32_t)s->hidden};
    const uint32_t d_b[2] = {d, g};
    s->w = float_const(&m->operands[op->inputs[1]], 3, d_ih);
    s->w_hh = float_const(wh, 3, d_hh);
    s->b = float_const(&m->operands[op->inputs[3]], 2, d_b);
    s->b_hh = float_const(&m->operands[op->inputs[4]], 2, d_b);
    if (!s->w || !s->w_hh || !s->b || !s->b_hh)
        return failf(err, 1, i, "GRU's weights and biases are not float32 constants of [%zu, 3H, I], "
                     "[%zu, 3H, H] and [%zu, 3H]", s->dirs, s->dirs, s->dirs);
    size_t need = mdla_cpu_gru_scratch(s->in, s->hidden);
    if (need > cp->gru_len) cp->gru_len = need;
    return true;
}

/* FULLY_CONNECTED_F32 x weights bias -> y: x (..., I) float32, weights [O, I], bias [O]. */
static bool prepare_fc_f32(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                           mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 3 || op->n_outputs != 1)
        return failf(err, 1, i, "FULLY_CONNECTED_F32 wants 3 inputs and 1 output");
    const mdla_operand *x = &m->operands[op->inputs[0]], *w = &m->operands[op->inputs[1]];
    const mdla_operand *y = &m->operands[op->outputs[0]];
    if (!is_f32(x) || !is_f32(y) || x->rank < 1 || y->rank != x->rank || w->rank != 2)
        return failf(err, 1, i, "FULLY_CONNECTED_F32 wants float32 x and y of one rank, weights [O, I]");
    s->in = x->dims[x->rank - 1];
    s->hidden = w->dims[0];
    s->steps = (size_t)(x->elements / (s->in ? s->in : 1));
    bool dims_ok = w->dims[1] == s->in && y->dims[y->rank - 1] == s->hidden;
    for (uint32_t d = 0; dims_ok && d + 1 < x->rank; d++) dims_ok = y->dims[d] == x->dims[d];
    if (!dims_ok) return failf(err, 1, i, "FULLY_CONNECTED_F32's x, weights and y do not fit");
    const uint32_t dw[2] = {(uint32_t)s->hidden, (uint32_t)s->in}, db[1] = {(uint32_t)s->hidden};
    s->w = float_const(w, 2, dw);
    s->b = float_const(&m->operands[op->inputs[2]], 1, db);
    if (!s->w || !s->b)
        return failf(err, 1, i, "FULLY_CONNECTED_F32's weights and bias are not float32 constants");
    return true;
}

/* CONCATENATION_F32 x_0 .. x_k axis -> y, all float32: y = the x's joined along axis. */
static bool prepare_concat_f32(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                               mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs < 2 || op->n_outputs != 1)
        return failf(err, 1, i, "CONCATENATION_F32 wants inputs, an axis and 1 output");
    const uint32_t n = op->n_inputs - 1;
    const mdla_operand *a = &m->operands[op->inputs[n]], *y = &m->operands[op->outputs[0]];
    if (!is_f32(y) || y->rank < 1 || a->type != NEURON_INT32 || !a->has_value || a->i32 < 0 ||
        (uint32_t)a->i32 >= y->rank)
        return failf(err, 1, i, "CONCATENATION_F32 wants a float32 y and an int32 axis in [0, rank)");
    const uint32_t axis = (uint32_t)a->i32;
    size_t inner = 1, along = 0;
    s->outer = 1;
    for (uint32_t d = 0; d < axis; d++) s->outer *= y->dims[d];
    for (uint32_t d = axis + 1; d < y->rank; d++) inner *= y->dims[d];
    s->runs = calloc(n, sizeof *s->runs);
    if (!s->runs) return failf(err, 4, i, "out of memory");
    s->count = n;
    for (uint32_t k = 0; k < n; k++) {
        const mdla_operand *x = &m->operands[op->inputs[k]];
        bool fits = is_f32(x) && x->rank == y->rank;
        for (uint32_t d = 0; fits && d < y->rank; d++) fits = d == axis || x->dims[d] == y->dims[d];
        if (!fits) return failf(err, 1, i, "CONCATENATION_F32's input %u is not float32 of y's dims off axis %u", k, axis);
        s->runs[k] = x->dims[axis] * inner;
        along += x->dims[axis];
    }
    if (along != y->dims[axis]) return failf(err, 1, i, "CONCATENATION_F32's inputs do not add up to y along axis %u", axis);
    return true;
}

static void run_concat_f32(const step *s, const mdla_operation *op, void *const *data) {
    float *dst = data[op->outputs[0]];
    for (size_t o = 0; o < s->outer; o++)
        for (size_t k = 0; k < s->count; k++) {
            memcpy(dst, (const float *)data[op->inputs[k]] + o * s->runs[k], s->runs[k] * sizeof *dst);
            dst += s->runs[k];
        }
}

static bool prepare_layer_norm(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                               mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 4 || op->n_outputs != 1)
        return failf(err, 1, i, "LAYER_NORM wants 4 inputs and 1 output");
    const mdla_operand *x = &m->operands[op->inputs[0]], *y = &m->operands[op->outputs[0]];
    const mdla_operand *eps = &m->operands[op->inputs[3]];
    if (!is_int8(x) || !is_int8(y) || !same_dims(x, y) || x->rank < 1 || x->dims[x->rank - 1] == 0)
        return failf(err, 1, i, "LAYER_NORM wants int8 x and y of one non-empty shape");
    if (eps->type != NEURON_FLOAT32 || !eps->has_value)
        return failf(err, 1, i, "LAYER_NORM's eps is not a float32 scalar");
    s->n = x->dims[x->rank - 1];
    s->rows = (size_t)(x->elements / s->n);
    s->w = float_vector(&m->operands[op->inputs[1]], s->n);
    s->b = float_vector(&m->operands[op->inputs[2]], s->n);
    if (!s->w || !s->b)
        return failf(err, 1, i, "LAYER_NORM's weight and bias are not float32 [n] constants");
    s->eps = eps->f32;
    s->s_in = x->scale;
    s->z_in = x->zero_point;
    s->s_out = y->scale;
    s->z_out = y->zero_point;
    return true;
}

static bool prepare_group_norm(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                               mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 6 || op->n_outputs != 1)
        return failf(err, 1, i, "GROUP_NORM wants 6 inputs and 1 output");
    const mdla_operand *x = &m->operands[op->inputs[0]], *y = &m->operands[op->outputs[0]];
    const mdla_operand *g = &m->operands[op->inputs[3]], *a = &m->operands[op->inputs[4]];
    const mdla_operand *eps = &m->operands[op->inputs[5]];
    if (!is_int8(x) || !is_int8(y) || !same_dims(x, y) || x->rank < 2 || x->elements == 0)
        return failf(err, 1, i, "GROUP_NORM wants int8 x and y of one non-empty shape");
    if (a->type != NEURON_INT32 || !a->has_value || a->i32 < 1 || (uint32_t)a->i32 >= x->rank)
        return failf(err, 1, i, "GROUP_NORM's axis is not an int32 scalar in [1, %u)", x->rank);
    const uint32_t axis = (uint32_t)a->i32;
    if (g->type != NEURON_INT32 || !g->has_value || g->i32 < 1 || x->dims[axis] % (uint32_t)g->i32)
        return failf(err, 1, i, "GROUP_NORM's groups do not divide its %u channels", x->dims[axis]);
    if (eps->type != NEURON_FLOAT32 || !eps->has_value)
        return failf(err, 1, i, "GROUP_NORM's eps is not a float32 scalar");
    s->shape[0] = x->dims[0];
    s->shape[1] = s->shape[3] = 1;
    for (uint32_t d = 1; d < axis; d++) s->shape[1] *= x->dims[d];
    for (uint32_t d = axis + 1; d < x->rank; d++) s->shape[3] *= x->dims[d];
    s->shape[2] = x->dims[axis];
    s->groups = (size_t)g->i32;
    s->w = float_vector(&m->operands[op->inputs[1]], s->shape[2]);
    s->b = float_vector(&m->operands[op->inputs[2]], s->shape[2]);
    if (!s->w || !s->b)
        return failf(err, 1, i, "GROUP_NORM's weight and bias are not float32 [C] constants");
    s->eps = eps->f32;
    s->s_in = x->scale;
    s->z_in = x->zero_point;
    s->s_out = y->scale;
    s->z_out = y->zero_point;
    return true;
}

/* ADAPTIVE_AVG_POOL_2D / ADAPTIVE_MAX_POOL_2D x out_h out_w -> y, NHWC int8 of one scale and
 * zero point. */
static bool prepare_adaptive(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                             const char *name, mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 3 || op->n_outputs != 1)
        return failf(err, 1, i, "%s wants 3 inputs and 1 output", name);
    const mdla_operand *x = &m->operands[op->inputs[0]], *y = &m->operands[op->outputs[0]];
    const mdla_operand *oh = &m->operands[op->inputs[1]], *ow = &m->operands[op->inputs[2]];
    if (!is_int8(x) || !is_int8(y) || x->rank != 4 || y->rank != 4)
        return failf(err, 1, i, "%s wants int8 NHWC x and y", name);
    if (oh->type != NEURON_INT32 || !oh->has_value || ow->type != NEURON_INT32 ||
        !ow->has_value || oh->i32 < 1 || ow->i32 < 1 || y->dims[0] != x->dims[0] ||
        y->dims[1] != (uint32_t)oh->i32 || y->dims[2] != (uint32_t)ow->i32 ||
        y->dims[3] != x->dims[3])
        return failf(err, 1, i, "%s's out_h, out_w are not y's height, width", name);
    if (x->scale != y->scale || x->zero_point != y->zero_point)
        return failf(err, 1, i, "%s's x and y differ in scale or zero point", name);
    for (int d = 0; d < 4; d++) s->pool[d] = x->dims[d];
    s->pool[4] = y->dims[1];
    s->pool[5] = y->dims[2];
    return true;
}

/* MAX_POOL_3D x kt kh kw st sh sw pt ph pw -> y, NDHWC int8 of one scale and zero point. */
static bool prepare_max_pool_3d(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                                mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 10 || op->n_outputs != 1)
        return failf(err, 1, i, "MAX_POOL_3D wants x, 9 int32 scalars and 1 output");
    const mdla_operand *x = &m->operands[op->inputs[0]], *y = &m->operands[op->outputs[0]];
    if (!is_int8(x) || !is_int8(y) || x->rank != 5 || y->rank != 5)
        return failf(err, 1, i, "MAX_POOL_3D wants int8 NDHWC x and y");
    if (x->scale != y->scale || x->zero_point != y->zero_point)
        return failf(err, 1, i, "MAX_POOL_3D's x and y differ in scale or zero point");
    size_t v[9];
    for (int k = 0; k < 9; k++) {
        const mdla_operand *o = &m->operands[op->inputs[1 + k]];
        if (o->type != NEURON_INT32 || !o->has_value || o->i32 < 0 || (k < 6 && o->i32 < 1))
            return failf(err, 1, i, "MAX_POOL_3D's operand %d is not a valid int32 scalar", k + 1);
        v[k] = (size_t)o->i32;
    }
    for (int d = 0; d < 3; d++) {
        s->p3_k[d] = v[d];
        s->p3_s[d] = v[3 + d];
        s->p3_p[d] = v[6 + d];
        s->p3_out[d] = y->dims[1 + d];
        const size_t span = x->dims[1 + d] + 2 * s->p3_p[d];
        if (s->p3_p[d] >= s->p3_k[d] || span < s->p3_k[d] ||
            (span - s->p3_k[d]) / s->p3_s[d] + 1 != s->p3_out[d])
            return failf(err, 1, i, "MAX_POOL_3D's windows do not give y's shape");
    }
    for (int d = 0; d < 5; d++) s->p3_in[d] = x->dims[d];
    if (y->dims[0] != x->dims[0] || y->dims[4] != x->dims[4])
        return failf(err, 1, i, "MAX_POOL_3D's y has another batch or channel count");
    return true;
}

/* The manifest's rounding as the emulator's kernels take it. */
static int manifest_rounding(const mdla_manifest *m) {
    return m->rounding.n == 6 && memcmp(m->rounding.s, "single", 6) == 0 ? EMU_ROUND_SINGLE
                                                                          : EMU_ROUND_DOUBLE;
}

/* Whether host op `code` is of the table group: its one form is `x:a table:a` (the schema's
 * TABLE_FORM), whatever its name (GELU, ELU, EXP, ...). */
static bool is_table_op(int32_t code) {
    const mdla_op_signature *sig = mdla_op_signature_of(code);
    return sig && sig->forms[0] && !sig->forms[1] && strcmp(sig->forms[0], "aa") == 0 &&
           strcmp(sig->outputs, "a") == 0;
}

/* A table op x table -> y: y[i] = table[x[i] + 128], the 256 codes the quantizer computed. */
static bool prepare_table(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                          const char *name, mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 2 || op->n_outputs != 1)
        return failf(err, 1, i, "%s wants 2 inputs and 1 output", name);
    const mdla_operand *x = &m->operands[op->inputs[0]], *t = &m->operands[op->inputs[1]],
                       *y = &m->operands[op->outputs[0]];
    if (!is_int8(x) || !is_int8(y) || !same_dims(x, y))
        return failf(err, 1, i, "%s wants int8 x and y of one shape", name);
    if (t->type != NEURON_TENSOR_QUANT8_ASYMM_SIGNED || !t->has_data || t->elements != 256 ||
        t->data_len != 256)
        return failf(err, 1, i, "%s's table is not a constant of 256 int8 values", name);
    memcpy(s->table, t->data, 256);
    s->count = (size_t)x->elements;
    return true;
}

/* ARGMAX x axis -> y: the first index of the largest code along `axis`, as int8 at scale 1,
 * zero point 0 (mdla_quant/kernels/argmax.py); y keeps the axis as 1 (keepdims) or drops it. */
static bool prepare_argmax(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                           mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 2 || op->n_outputs != 1)
        return failf(err, 1, i, "ARGMAX wants 2 inputs and 1 output");
    const mdla_operand *x = &m->operands[op->inputs[0]], *a = &m->operands[op->inputs[1]],
                       *y = &m->operands[op->outputs[0]];
    if (!is_int8(x) || !is_int8(y) || x->rank < 1)
        return failf(err, 1, i, "ARGMAX wants int8 x and y");
    if (a->type != NEURON_INT32 || !a->has_value || a->i32 < 0 || (uint32_t)a->i32 >= x->rank)
        return failf(err, 1, i, "ARGMAX's axis is not an int32 scalar in [0, %u)", x->rank);
    if (y->scale != 1.0f || y->zero_point != 0)
        return failf(err, 1, i, "ARGMAX's output must have scale 1 and zero point 0 (class index)");
    const uint32_t axis = (uint32_t)a->i32;
    const bool keep = y->rank == x->rank;
    bool dims_ok = keep || y->rank + 1 == x->rank;
    for (uint32_t d = 0, e = 0; dims_ok && d < x->rank; d++) {
        if (d == axis && !keep) continue;
        dims_ok = y->dims[e++] == (d == axis ? 1u : x->dims[d]);
    }
    if (!dims_ok) return failf(err, 1, i, "ARGMAX's output dims are not its input's without axis %u", axis);
    if (x->dims[axis] < 1 || x->dims[axis] > 128)
        return failf(err, 1, i, "ARGMAX over %u classes: 1 to 128 fit int8", x->dims[axis]);
    s->outer = s->inner = 1;
    for (uint32_t d = 0; d < axis; d++) s->outer *= x->dims[d];
    for (uint32_t d = axis + 1; d < x->rank; d++) s->inner *= x->dims[d];
    s->classes = x->dims[axis];
    return true;
}

static void run_argmax(const step *s, const int8_t *x, int8_t *y) {
    for (size_t o = 0; o < s->outer; o++) {
        const int8_t *xo = x + o * s->classes * s->inner;
        for (size_t j = 0; j < s->inner; j++) {
            int8_t best = xo[j];
            size_t at = 0;
            for (size_t k = 1; k < s->classes; k++) {
                const int8_t v = xo[k * s->inner + j];
                if (v > best) { /* strictly: the first maximum wins a tie */
                    best = v;
                    at = k;
                }
            }
            y[o * s->inner + j] = (int8_t)at;
        }
    }
}

static bool prepare_kernel(mdla_cpu_part *cp, const mdla_operation *op, step *s,
                           EmuOperation *eop, mdla_cpu_error *err) {
    const long i = (long)s->op;
    const EmuKernel *k = op->code == NEURON_TRANSPOSE        ? &emu_k_transpose
                         : op->code == NEURON_STRIDED_SLICE ? &emu_k_strided_slice
                                                            : emu_kernel(op->code);
    if (k == NULL)
        return failf(err, 3, i, "the cpu device has no kernel for %s", neuron_op_name(op->code));
    eop->code = op->code;
    eop->n_in = op->n_inputs;
    eop->n_out = op->n_outputs;
    eop->in = op->inputs; /* the manifest's arrays: never freed here */
    eop->out = op->outputs;
    if (op->n_outputs != 1)
        return failf(err, 1, i, "%s on the cpu device wants one output", k->name);
    for (uint32_t a = 0; a < op->n_inputs; a++)
        if (cp->model.opnds[op->inputs[a]].rank > EMU_MAX_RANK)
            return failf(err, 1, i, "%s: an operand of rank over 6", k->name);
    const int rounding = manifest_rounding(cp->m);
    int rc = emu_check_signature(&cp->model, eop);
    /* the manifest's rounding; a CPU requantizes in int64, so nothing wraps */
    const EmuNumerics num = {rounding, false};
    if (rc == NEURON_NO_ERROR) rc = k->prepare(&cp->model, eop, num, &s->params);
    if (rc == NEURON_OUT_OF_MEMORY) return failf(err, 4, i, "out of memory preparing %s", k->name);
    if (rc != NEURON_NO_ERROR)
        return failf(err, 1, i, "%s: the kernel refuses the operation's operands (%s)", k->name,
                     neuron_result_name(rc));
    s->kernel = k;
    size_t need = k->scratch_bytes ? k->scratch_bytes(s->params) : 0;
    if (need > cp->scratch_len) cp->scratch_len = need;
    return true;
}

/* An int8 per-tensor operand, computed or constant (SELECT reads either). */
static bool is_int8_operand(const mdla_operand *o) {
    return o->type == NEURON_TENSOR_QUANT8_ASYMM_SIGNED && !o->per_channel && !o->has_value;
}

/* SELECT x y a b compare -> out: four int8 tensors of out's shape, each its own params. */
static bool prepare_select(const mdla_cpu_part *cp, const mdla_operation *op, step *s,
                           mdla_cpu_error *err) {
    const mdla_manifest *m = cp->m;
    const long i = (long)s->op;
    if (op->n_inputs != 5 || op->n_outputs != 1)
        return failf(err, 1, i, "SELECT wants x, y, a, b, compare and 1 output");
    const mdla_operand *out = &m->operands[op->outputs[0]];
    const mdla_operand *cmp = &m->operands[op->inputs[4]];
    if (!is_int8(out)) return failf(err, 1, i, "SELECT wants an int8 output");
    for (int k = 0; k < 4; k++) {
        const mdla_operand *o = &m->operands[op->inputs[k]];
        if (!is_int8_operand(o) || !same_dims(o, out))
            return failf(err, 1, i, "SELECT's operand %d is not int8 of the output's shape", k);
    }
    if (cmp->type != NEURON_INT32 || !cmp->has_value || cmp->i32 < MDLA_CMP_GT ||
        cmp->i32 > MDLA_CMP_NE)
        return failf(err, 1, i, "SELECT's compare is not a comparison code (0..5)");
    const mdla_operand *x = &m->operands[op->inputs[0]], *y = &m->operands[op->inputs[1]];
    const mdla_operand *a = &m->operands[op->inputs[2]], *b = &m->operands[op->inputs[3]];
    s->s_in = x->scale;
    s->z_in = x->zero_point;
    s->s_out = y->scale;
    s->z_out = y->zero_point;
    s->compare = cmp->i32;
    mdla_cpu_requantize_table(a->scale, a->zero_point, out->scale, out->zero_point, s->table);
    mdla_cpu_requantize_table(b->scale, b->zero_point, out->scale, out->zero_point, s->table_b);
    s->count = 1;
    for (uint32_t d = 0; d < out->rank; d++) s->count *= out->dims[d];
    return true;
}

/* The data of operand `k` of `op`: a constant's own, else the run's buffer. */
static const int8_t *operand_data(const mdla_cpu_part *cp, const mdla_operation *op, int k,
                                  void *const *data) {
    const EmuOperand *e = &cp->model.opnds[op->inputs[k]];
    return e->has_value ? e->value : data[op->inputs[k]];
}

bool mdla_cpu_prepare(const mdla_manifest *m, const mdla_partition *p, mdla_cpu_part **out,
                      mdla_cpu_error *err) {
    memset(err, 0, sizeof *err);
    err->op = -1;
    *out = NULL;
    mdla_cpu_part *cp = calloc(1, sizeof *cp);
    if (!cp) return failf(err, 4, -1, "out of memory");
    cp->m = m;
    cp->steps = calloc(p->n_operations ? p->n_operations : 1, sizeof *cp->steps);
    cp->model.ops = calloc(p->n_operations ? p->n_operations : 1, sizeof *cp->model.ops);
    bool ok = cp->steps && cp->model.ops ? fill_operands(cp, err)
                                         : failf(err, 4, -1, "out of memory");
    size_t row = 1;
    for (uint32_t k = 0; ok && k < p->n_operations; k++) {
        const mdla_operation *op = &m->operations[p->operations[k]];
        step *s = &cp->steps[k];
        s->op = p->operations[k];
        cp->n_steps = k + 1;
        cp->model.n_ops = k + 1;
        if (op->n_inputs > cp->max_args) cp->max_args = op->n_inputs;
        const char *host = host_name(op->code);
        if (host && strcmp(host, "LAYER_NORM") == 0) {
            s->kind = STEP_LAYER_NORM;
            ok = prepare_layer_norm(cp, op, s, err);
            if (ok && s->n > row) row = s->n;
        } else if (host && strcmp(host, "GROUP_NORM") == 0) {
            s->kind = STEP_GROUP_NORM;
            ok = prepare_group_norm(cp, op, s, err);
        } else if (host && (strcmp(host, "ADAPTIVE_AVG_POOL_2D") == 0 ||
                            strcmp(host, "ADAPTIVE_MAX_POOL_2D") == 0)) {
            s->kind = STEP_ADAPTIVE_AVG;
            s->pool_max = strcmp(host, "ADAPTIVE_MAX_POOL_2D") == 0;
            ok = prepare_adaptive(cp, op, s, host, err);
        } else if (host && strcmp(host, "MAX_POOL_3D") == 0) {
            s->kind = STEP_MAX_POOL_3D;
            ok = prepare_max_pool_3d(cp, op, s, err);
        } else if (host && strcmp(host, "SELECT") == 0) {
            s->kind = STEP_SELECT;
            ok = prepare_select(cp, op, s, err);
        } else if (host && is_table_op(op->code)) {
            s->kind = STEP_TABLE;
            ok = prepare_table(cp, op, s, host, err);
        } else if (host && strcmp(host, "ARGMAX") == 0) {
            s->kind = STEP_ARGMAX;
            ok = prepare_argmax(cp, op, s, err);
        } else if (host && strcmp(host, "GRU") == 0) {
            s->kind = STEP_GRU;
            ok = prepare_gru(cp, op, s, err);
        } else if (host && strcmp(host, "FULLY_CONNECTED_F32") == 0) {
            s->kind = STEP_FC_F32;
            ok = prepare_fc_f32(cp, op, s, err);
        } else if (host && strcmp(host, "CONCATENATION_F32") == 0) {
            s->kind = STEP_CONCAT_F32;
            ok = prepare_concat_f32(cp, op, s, err);
        } else if (host) {
            ok = failf(err, 3, (long)s->op, "the cpu device has no kernel for host op %s", host);
        } else if (op->code == NEURON_DEQUANTIZE) {
            s->kind = STEP_DEQUANTIZE;
            ok = prepare_dequantize(cp, op, s, err);
        } else {
            s->kind = STEP_KERNEL;
            ok = prepare_kernel(cp, op, s, &cp->model.ops[k], err);
        }
    }
    if (ok) {
        const size_t ln = mdla_cpu_layer_norm_scratch(row) * sizeof(float);
        if (ln > cp->scratch_len) cp->scratch_len = ln;
        cp->scratch_len = (cp->scratch_len + 63) / 64 * 64; /* each thread's on its own lines */
        cp->pool = emu_pool_acquire(emu_env_threads("MDLA_CPU_THREADS"));
        cp->scratch = malloc(cp->scratch_len * (size_t)emu_pool_threads(cp->pool));
        cp->args = calloc(cp->max_args + 1, sizeof *cp->args);
        cp->gru = malloc(cp->gru_len ? cp->gru_len * sizeof *cp->gru : 1);
        if (!cp->scratch || !cp->args || !cp->gru) ok = failf(err, 4, -1, "out of memory");
    }
    if (!ok) {
        mdla_cpu_free(cp);
        return false;
    }
    *out = cp;
    return true;
}

void mdla_cpu_run(mdla_cpu_part *cp, void *const *data) {
    const mdla_manifest *m = cp->m;
    EmuScratch scratch = {cp->scratch, cp->scratch_len, cp->pool};
    for (uint32_t k = 0; k < cp->n_steps; k++) {
        const step *s = &cp->steps[k];
        const mdla_operation *op = &m->operations[s->op];
        const int8_t *x = data[op->inputs[0]];
        int8_t *y = data[op->outputs[0]];
        if (s->kind == STEP_LAYER_NORM) {
            const mdla_ln_job job = {x, s->n, s->s_in, s->z_in, s->w, s->b, s->eps, s->s_out,
                                     s->z_out, y, 0};
            mdla_cpu_layer_norm_split(&scratch, s->rows, &job);
        } else if (s->kind == STEP_GROUP_NORM) {
            mdla_cpu_group_norm(x, s->shape, s->groups, s->s_in, s->z_in, s->w, s->b, s->eps,
                                s->s_out, s->z_out, y);
        } else if (s->kind == STEP_MAX_POOL_3D) {
            mdla_cpu_max_pool_3d(x, s->p3_in, s->p3_out, s->p3_k, s->p3_s, s->p3_p, y);
        } else if (s->kind == STEP_ADAPTIVE_AVG) {
            mdla_cpu_adaptive_pool(x, s->pool[0], s->pool[1], s->pool[2], s->pool[3], s->pool[4],
                                   s->pool[5], s->pool_max, y);
        } else if (s->kind == STEP_SELECT) {
            mdla_cpu_select(operand_data(cp, op, 0, data), s->s_in, s->z_in,
                            operand_data(cp, op, 1, data), s->s_out, s->z_out, s->compare,
                            operand_data(cp, op, 2, data), s->table,
                            operand_data(cp, op, 3, data), s->table_b, s->count, y);
        } else if (s->kind == STEP_TABLE) {
            mdla_cpu_apply_table_split(&scratch, x, s->count, s->table, y);
        } else if (s->kind == STEP_ARGMAX) {
            run_argmax(s, x, y);
        } else if (s->kind == STEP_DEQUANTIZE) {
            mdla_cpu_dequantize(x, s->count, s->s_in, s->z_in, data[op->outputs[0]]);
        } else if (s->kind == STEP_GRU) {
            mdla_cpu_gru(data[op->inputs[0]], s->steps, s->in, s->hidden, s->dirs, s->w, s->w_hh,
                         s->b, s->b_hh, cp->gru, data[op->outputs[0]]);
        } else if (s->kind == STEP_FC_F32) {
            mdla_cpu_fc_f32(data[op->inputs[0]], s->steps, s->in, s->hidden, s->w, s->b,
                            data[op->outputs[0]]);
        } else if (s->kind == STEP_CONCAT_F32) {
            run_concat_f32(s, op, data);
        } else {
            for (uint32_t a = 0; a < op->n_inputs; a++) {
                const EmuOperand *e = &cp->model.opnds[op->inputs[a]];
                cp->args[a] = e->has_value ? e->value : data[op->inputs[a]];
            }
            s->kernel->eval(s->params, cp->args, y, &scratch);
        }
    }
}

void mdla_cpu_free(mdla_cpu_part *cp) {
    if (!cp) return;
    for (uint32_t k = 0; cp->steps && k < cp->n_steps; k++) {
        step *s = &cp->steps[k];
        if (s->kernel && s->params) s->kernel->release(s->params);
        free(s->w);
        free(s->b);
        free(s->w_hh);
        free(s->b_hh);
        free(s->runs);
    }
    free(cp->steps);
    free(cp->model.opnds);
    free(cp->model.ops);
    free(cp->scratch);
    emu_pool_release(cp->pool);
    free(cp->gru);
    free(cp->args);
    free(cp);
}
