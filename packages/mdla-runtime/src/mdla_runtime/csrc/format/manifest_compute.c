/* manifest_compute.c: what a file makes the machine compute, checks 7 and 8 of the semantic
 * validation. 7, how much (chk_compute): each operation's multiply-adds or compares from the
 * shapes, and their running sum, within the budget; the twin of mdla_runtime/format/compute.py
 * (its docstring states the rule); sums and products saturate at 2^64 - 1, as the Python reader
 * caps its exact ones. 8, on what (chk_finite): every float32 constant is finite; the twin of
 * mdla_runtime/format/finite.py. */
#include "manifest_check.h"
#include "mdla_ops.h"
#include "neuron_abi.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GIGA 1000000000ull
#define HOST_GRU (MDLA_HOST_OP_BASE + 3)
#define HOST_FC_F32 (MDLA_HOST_OP_BASE + 4)

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

static bool is_scalar(const mdla_operand *o) { return o->type == 0 || o->type == 1 || o->type == 6; }

static uint64_t elements(const mdla_operand *o) {
    uint64_t n = 1;
    for (uint32_t k = 0; k < o->rank; k++) n *= o->dims[k]; /* < 2^31: checked by the reader */
    return n;
}

static uint64_t first_dim(const mdla_operand *o) { return o->rank ? o->dims[0] : 1; }
static uint64_t last_dim(const mdla_operand *o) { return o->rank ? o->dims[o->rank - 1] : 1; }

/* An INT32 scalar's value when it is at least 1, else 1. */
static uint64_t int_scalar(const mdla_operand *o) {
    return o->type == 1 && o->has_value && o->i32 >= 1 ? (uint64_t)o->i32 : 1;
}

static uint64_t reduction(const mdla_manifest *m, const mdla_operation *op) {
    const mdla_operand *in0 = &m->operands[op->inputs[0]];
    const mdla_operand *y = op->n_outputs ? &m->operands[op->outputs[0]] : NULL;
    const uint64_t out = y && !is_scalar(y) ? elements(y) : 0;
    const mdla_operand *w = op->n_inputs > 1 ? &m->operands[op->inputs[1]] : in0;
    switch (op->code) {
    case NEURON_CONV_2D: case NEURON_FULLY_CONNECTED: case HOST_FC_F32:
        return sat_mul(out, elements(w) / first_dim(w));
    case NEURON_DEPTHWISE_CONV_2D:
        return sat_mul(out, elements(w) / last_dim(w));
    case NEURON_TRANSPOSE_CONV_2D:
        return sat_mul(elements(in0), elements(w) / last_dim(w));
    case NEURON_AVERAGE_POOL_2D: case NEURON_MAX_POOL_2D: {
        const uint32_t fw = op->n_inputs >= 10 ? 7 : 4;
        const uint64_t w_ = int_scalar(&m->operands[op->inputs[fw]]);
        const uint64_t h_ = int_scalar(&m->operands[op->inputs[fw + 1]]);
        return sat_mul(sat_mul(out, w_), h_);
    }
    case NEURON_BATCH_MATMUL: {
        if (in0->rank < 2) return out;
        const uint32_t a = in0->dims[in0->rank - 2], b = in0->dims[in0->rank - 1];
        return sat_mul(out, a > b ? a : b);
    }
    case HOST_GRU: {
        const mdla_operand *hh = &m->operands[op->inputs[2]];
        return sat_mul(elements(w) + elements(hh), elements(in0) / last_dim(w));
    }
    default:
        return 0;
    }
}

/* One operation's work: its tensors' elements, plus its reduction (compute.py: op_work). */
static uint64_t op_work(const mdla_manifest *m, const mdla_operation *op) {
    uint64_t touched = 0;
    for (uint32_t k = 0; k < op->n_inputs + op->n_outputs; k++) {
        const uint32_t x = k < op->n_inputs ? op->inputs[k] : op->outputs[k - op->n_inputs];
        if (!is_scalar(&m->operands[x])) touched += elements(&m->operands[x]);
    }
    return op->n_inputs ? sat_add(touched, reduction(m, op)) : touched;
}

bool chk_compute(checker *c, const mdla_manifest *m, const mdla_budget *b) {
    char f[64], why[MDLA_WHY_MAX];
    uint64_t total = 0;
    uint32_t e = mp_get(c->doc, 0, "operations") + 1;
    for (uint32_t i = 0; i < m->n_operations; i++, e = chk_node(c, e)->next) {
        const uint64_t work = op_work(m, &m->operations[i]);
        mdla_fmt(f, sizeof f, "operations[%u]", i);
        if (work > b->max_op_ops) {
            mdla_fmt(why, sizeof why, "%llu multiply-adds or compares > the per-operation limit of %llu G "
                     "(raise it with --max-op-gops)", (unsigned long long)work,
                     (unsigned long long)(b->max_op_ops / GIGA));
            return chk_fail(c, "OverBudget", f, chk_node(c, e)->offset, why);
        }
        total = sat_add(total, work);
        if (total > b->max_total_ops) {
            mdla_fmt(why, sizeof why, "operations[0..%u] need %llu multiply-adds or compares > the total limit "
                     "of %llu G (raise it with --max-total-gops)", i, (unsigned long long)total,
                     (unsigned long long)(b->max_total_ops / GIGA));
            return chk_fail(c, "OverBudget", f, chk_node(c, e)->offset, why);
        }
    }
    return true;
}

/* The node of `key` in operands[i]'s map. */
static uint64_t operand_key_at(const checker *c, uint32_t i, const char *key) {
    uint32_t e = mp_get(c->doc, 0, "operands") + 1;
    for (uint32_t k = 0; k < i; k++) e = chk_node(c, e)->next;
    return chk_node(c, mp_get(c->doc, e, key))->offset;
}

bool chk_finite(checker *c, const mdla_manifest *m) {
    char f[64], why[MDLA_WHY_MAX];
    for (uint32_t i = 0; i < m->n_operands; i++) {
        const mdla_operand *o = &m->operands[i];
        if (o->type == 0 && !isfinite(o->f32)) { /* FLOAT32: beyond FLT_MAX reads as +-inf */
            mdla_fmt(f, sizeof f, "operands[%u].value", i);
            mdla_fmt(why, sizeof why, "float32 value is not a finite float32");
            return chk_fail(c, "NonFinite", f, operand_key_at(c, i, "value"), why);
        }
        if (o->type != 3 || !o->has_data) continue; /* TENSOR_FLOAT32 constants */
        for (uint64_t k = 0; k < o->data_len / 4; k++) {
            const uint8_t *p = o->data + 4 * k;
            const uint32_t bits = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            if ((bits & 0x7F800000u) != 0x7F800000u) continue;
            mdla_fmt(f, sizeof f, "operands[%u].data", i);
            mdla_fmt(why, sizeof why, "element %llu is %s; float32 constants must be finite",
                     (unsigned long long)k, bits & 0x007FFFFFu ? "nan" : bits >> 31 ? "-inf" : "inf");
            return chk_fail(c, "NonFinite", f, operand_key_at(c, i, "data"), why);
        }
    }
    return true;
}
