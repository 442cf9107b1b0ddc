/*
 * plan.c: the operations a compute leaves out.
 *
 * SiLU as the graph writes it, MUL(x, LOGISTIC(x)), is one 256-entry table of x in the MUL
 * (k_mul.c): the MUL never reads the LOGISTIC's output. When that output is a temporary (not a
 * model output, so no client can read it) and every operation reading it is such a MUL taking
 * the LOGISTIC's own input as x, nothing reads the tensor and the LOGISTIC is not run; its
 * bytes stay unwritten. A LOGISTIC with any other reader, or whose output the model exposes,
 * runs as before. The debug report still has its line (`emu_report_skip`).
 */
#include <stdlib.h>

#include "compilation.h"

/* Operation `j` reads operand `t` only as the sigmoid of a SiLU MUL whose x is `x`. */
static bool reads_as_silu(const NeuronModel *m, void *const *params, uint32_t j, uint32_t t,
                          uint32_t x) {
    const EmuOperation *op = &m->ops[j];
    if (op->code != NEURON_MUL || op->n_in < 2) return false;
    const int k = emu_mul_silu_x(params[j]);
    return k >= 0 && op->in[k] == x && op->in[1 - k] == t;
}

/* The LOGISTIC `k` has a reader, and only SiLU MULs read its temporary output. */
static bool unread_sigmoid(const NeuronModel *m, void *const *params, uint32_t k) {
    const EmuOperation *l = &m->ops[k];
    if (l->code != NEURON_LOGISTIC || l->n_in < 1 || l->n_out != 1) return false;
    const uint32_t t = l->out[0], x = l->in[0];
    if (m->opnds[t].lifetime != EMU_TEMP) return false;
    bool read = false;
    for (uint32_t j = 0; j < m->n_ops; j++) {
        const EmuOperation *op = &m->ops[j];
        for (uint32_t i = 0; i < op->n_in; i++) {
            if (op->in[i] != t) continue;
            if (!reads_as_silu(m, params, j, t, x)) return false;
            read = true;
        }
    }
    return read;
}

bool *emu_plan_skips(const NeuronModel *m, void *const *params) {
    bool *skip = NULL;
    for (uint32_t k = 0; k < m->n_ops; k++) {
        if (!unread_sigmoid(m, params, k)) continue;
        if (skip == NULL && (skip = calloc(m->n_ops, sizeof *skip)) == NULL)
            return NULL; /* out of memory: every operation runs, as without a plan */
        skip[k] = true;
    }
    return skip;
}
