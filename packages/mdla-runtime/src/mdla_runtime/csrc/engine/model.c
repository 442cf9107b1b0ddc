/* model.c: manifest -> NeuronModel (see model.h). */
#include "model.h"

#include <stdlib.h>
#include <string.h>

bool plan_make(const mdla_manifest *m, uint32_t n_ops, mdla_plan *p) {
    memset(p, 0, sizeof *p);
    uint32_t n = m->n_operands ? m->n_operands : 1;
    uint8_t *flags = calloc(n, 1); /* 1 used, 2 produced, 4 read after the cut, 8 model output */
    p->map = malloc(n * sizeof *p->map);
    p->inputs = calloc(m->n_inputs + 1, sizeof *p->inputs);
    p->input_pos = calloc(m->n_inputs + 1, sizeof *p->input_pos);
    /* One slot per operand (a prefix cut) or per listed output (the whole model), whichever is
     * more: a manifest may list an operand as an output more than once. */
    p->outputs = calloc((size_t)n + m->n_outputs, sizeof *p->outputs);
    if (!flags || !p->map || !p->inputs || !p->input_pos || !p->outputs) {
        free(flags);
        plan_free(p);
        return false;
    }
    p->n_ops = n_ops;
    for (uint32_t i = 0; i < m->n_operations; i++) {
        const mdla_operation *op = &m->operations[i];
        for (uint32_t k = 0; k < op->n_inputs; k++) flags[op->inputs[k]] |= i < n_ops ? 1 : 4;
        for (uint32_t k = 0; k < op->n_outputs; k++)
            if (i < n_ops) flags[op->outputs[k]] |= 1 | 2;
    }
    for (uint32_t k = 0; k < m->n_outputs; k++) flags[m->outputs[k].operand] |= 8;
    uint32_t next = 0;
    for (uint32_t o = 0; o < m->n_operands; o++) p->map[o] = (flags[o] & 1) ? next++ : UINT32_MAX;
    for (uint32_t k = 0; k < m->n_inputs; k++) {
        uint32_t o = m->inputs[k].operand;
        if ((flags[o] & 1) && !(flags[o] & 2)) {
            p->input_pos[p->n_inputs] = k;
            p->inputs[p->n_inputs++] = o;
        }
    }
    if (n_ops >= m->n_operations) { /* the whole model: its outputs, in the manifest's order */
        for (uint32_t k = 0; k < m->n_outputs; k++)
            if (flags[m->outputs[k].operand] & 2) p->outputs[p->n_outputs++] = m->outputs[k].operand;
    } else {
        for (uint32_t o = 0; o < m->n_operands; o++)
            if ((flags[o] & 2) && (flags[o] & (4 | 8))) p->outputs[p->n_outputs++] = o;
    }
    free(flags);
    return true;
}

bool plan_make_partition(const mdla_manifest *m, const mdla_partition *part, mdla_plan *p) {
    memset(p, 0, sizeof *p);
    uint32_t n = m->n_operands ? m->n_operands : 1;
    p->map = malloc(n * sizeof *p->map);
    p->inputs = calloc(part->n_inputs + 1, sizeof *p->inputs);
    p->input_pos = calloc(part->n_inputs + 1, sizeof *p->input_pos);
    p->outputs = calloc(part->n_outputs + 1, sizeof *p->outputs);
    if (!p->map || !p->inputs || !p->input_pos || !p->outputs) {
        plan_free(p);
        return false;
    }
    for (uint32_t o = 0; o < m->n_operands; o++) p->map[o] = UINT32_MAX;
    for (uint32_t k = 0; k < part->n_operations; k++) {
        const mdla_operation *op = &m->operations[part->operations[k]];
        for (uint32_t a = 0; a < op->n_inputs; a++) p->map[op->inputs[a]] = 0;
        for (uint32_t a = 0; a < op->n_outputs; a++) p->map[op->outputs[a]] = 0;
    }
    uint32_t next = 0;
    for (uint32_t o = 0; o < m->n_operands; o++)
        if (p->map[o] != UINT32_MAX) p->map[o] = next++;
    p->n_ops = part->n_operations;
    p->ops = part->operations;
    p->n_inputs = part->n_inputs;
    memcpy(p->inputs, part->inputs, part->n_inputs * sizeof *p->inputs);
    p->n_outputs = part->n_outputs;
    memcpy(p->outputs, part->outputs, part->n_outputs * sizeof *p->outputs);
    return true;
}

void plan_free(mdla_plan *p) {
    free(p->map);
    free(p->inputs);
    free(p->input_pos);
    free(p->outputs);
    memset(p, 0, sizeof *p);
}

static bool check(int rc, const char *call, long op, long operand, build_error *err) {
    if (rc == NEURON_NO_ERROR) return true;
    err->code = rc;
    err->call = call;
    err->op = op;
    err->operand = operand;
    return false;
}

static bool add_operand(const neuron_api *api, NeuronModel *model, const mdla_operand *o,
                        uint32_t idx, long manifest_idx, build_error *err) {
    NeuronOperandType t = {o->type, o->rank, o->rank ? o->dims : NULL, o->scale, o->zero_point};
    if (o->per_channel) { t.scale = 0.0f; t.zeroPoint = 0; }
    if (!check(api->NeuronModel_addOperand(model, &t), "NeuronModel_addOperand", -1, manifest_idx, err))
        return false;
    if (o->per_channel) {
        NeuronSymmPerChannelQuantParams pc = {o->channel_dim, o->n_scales, o->scales};
        if (!check(api->NeuronModel_setOperandSymmPerChannelQuantParams(model, (int32_t)idx, &pc),
                   "NeuronModel_setOperandSymmPerChannelQuantParams", -1, manifest_idx, err))
            return false;
    }
    int rc = NEURON_NO_ERROR;
    if (o->has_value) {
        uint8_t b = o->b8 ? 1 : 0;
        if (o->type == NEURON_INT32) rc = api->NeuronModel_setOperandValue(model, (int32_t)idx, &o->i32, 4);
        else if (o->type == NEURON_FLOAT32) rc = api->NeuronModel_setOperandValue(model, (int32_t)idx, &o->f32, 4);
        else rc = api->NeuronModel_setOperandValue(model, (int32_t)idx, &b, 1);
    } else if (o->has_data && o->data_len) {
        rc = api->NeuronModel_setOperandValue(model, (int32_t)idx, o->data, (size_t)o->data_len);
    }
    return check(rc, "NeuronModel_setOperandValue", -1, manifest_idx, err);
}

bool model_build(const neuron_api *api, const mdla_manifest *m, const mdla_plan *p,
                 NeuronModel **model, build_error *err) {
    memset(err, 0, sizeof *err);
    err->op = err->operand = -1;
    *model = NULL;
    if (!check(api->NeuronModel_create(model), "NeuronModel_create", -1, -1, err)) return false;
    for (uint32_t o = 0; o < m->n_operands; o++)
        if (p->map[o] != UINT32_MAX && !add_operand(api, *model, &m->operands[o], p->map[o], o, err))
            return false;
    uint32_t cap = 16, *ins = malloc(cap * sizeof *ins), *outs = NULL;
    bool ok = ins != NULL;
    for (uint32_t k = 0; ok && k < p->n_ops && k < m->n_operations; k++) {
        const uint32_t i = p->ops ? p->ops[k] : k;
        const mdla_operation *op = &m->operations[i];
        uint32_t need = op->n_inputs > op->n_outputs ? op->n_inputs : op->n_outputs;
        if (need > cap) {
            uint32_t *grown = realloc(ins, need * sizeof *ins);
            if (!grown) { ok = false; break; }
            ins = grown;
            cap = need;
        }
        free(outs);
        outs = malloc((op->n_outputs + 1) * sizeof *outs);
        if (!outs) { ok = false; break; }
        for (uint32_t k = 0; k < op->n_inputs; k++) ins[k] = p->map[op->inputs[k]];
        for (uint32_t k = 0; k < op->n_outputs; k++) outs[k] = p->map[op->outputs[k]];
        ok = check(api->NeuronModel_addOperation(*model, op->code, op->n_inputs, ins,
                                                 op->n_outputs, outs),
                   "NeuronModel_addOperation", (long)i, -1, err);
    }
    free(outs);
    if (ok) {
        uint32_t n = p->n_inputs + p->n_outputs + 1;
        uint32_t *io = realloc(ins, n * sizeof *io);
        if (!io) ok = false;
        else {
            ins = io;
            for (uint32_t k = 0; k < p->n_inputs; k++) ins[k] = p->map[p->inputs[k]];
            for (uint32_t k = 0; k < p->n_outputs; k++) ins[p->n_inputs + k] = p->map[p->outputs[k]];
            ok = check(api->NeuronModel_identifyInputsAndOutputs(*model, p->n_inputs, ins,
                                                                 p->n_outputs, ins + p->n_inputs),
                       "NeuronModel_identifyInputsAndOutputs", -1, -1, err) &&
                 check(api->NeuronModel_finish(*model), "NeuronModel_finish", -1, -1, err);
        }
    }
    if (!ok && err->code == NEURON_NO_ERROR) check(NEURON_OUT_OF_MEMORY, "malloc", -1, -1, err);
    free(ins);
    return ok;
}
