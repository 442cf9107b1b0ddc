/*
 * execution.c: NeuronExecution_* (bind inputs and outputs, compute).
 *
 * An execution may compute many times (the engine's --repeat). setInput/setOutput take the
 * model input/output index, type NULL (or a type equal to the operand's) and the exact byte
 * size; buffers must outlive the execution. Temporaries live in the execution's block, at the
 * offsets the compilation planned (arena.c), after the threads' scratch. A compute on an
 * APU device (mtk-mdla, mtk-dsp) resumes the fake APU runtime-PM node for its duration.
 * MDLA_EMU_THREADS=n (default 1) gives the compilation n - 1 worker threads for the ops with
 * enough work: the process's pool for n (kernels/pool.c), acquired by its first execution (which
 * reads the variable) and shared with every later one and every other compilation at n; each
 * execution has n scratch areas. Results are the same for every n.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compilation.h"

void NeuronExecution_free(NeuronExecution *execution) {
    EMU_TRACE();
    NeuronExecution *e = execution;
    if (e == NULL) return;
    emu_arena_give(e->compilation, e->block);
    free(e->data);
    free(e->in_set);
    free(e->out_set);
    free(e->args);
    free(e);
}

int emu_compilation_threads(NeuronCompilation *c) {
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER; /* executions made concurrently */
    pthread_mutex_lock(&once);
    if (c->threads == 0) {
        c->pool = emu_pool_acquire(emu_env_threads("MDLA_EMU_THREADS"));
        c->threads = emu_pool_threads(c->pool);
    }
    pthread_mutex_unlock(&once);
    return c->threads;
}

int NeuronExecution_create(NeuronCompilation *compilation, NeuronExecution **execution) {
    EMU_TRACE();
    if (execution != NULL) *execution = NULL;
    if (compilation == NULL || execution == NULL) return NEURON_UNEXPECTED_NULL;
    if (!compilation->finished) return NEURON_BAD_STATE;
    const NeuronModel *m = compilation->model;
    NeuronExecution *e = calloc(1, sizeof *e);
    if (e == NULL) return NEURON_OUT_OF_MEMORY;
    e->compilation = compilation;
    emu_trace_silence(+1);
    e->loop_timeout = Neuron_getDefaultLoopTimeout();
    emu_trace_silence(-1);
    const size_t n = m->n_opnds ? m->n_opnds : 1;
    e->data = calloc(n, sizeof *e->data);
    e->in_set = calloc(m->n_inputs + 1, sizeof *e->in_set);
    e->out_set = calloc(m->n_outputs + 1, sizeof *e->out_set);
    const int threads = emu_compilation_threads(compilation);
    e->scratch_len = (compilation->scratch + 63) / 64 * 64; /* each thread's on its own lines */
    const size_t scratch = e->scratch_len * (size_t)threads; /* a multiple of EMU_ARENA_ALIGN */
    e->block = emu_arena_take(compilation, scratch + compilation->arena);
    e->scratch = e->block;
    for (uint32_t k = 0; k < m->n_ops; k++)
        if (m->ops[k].n_in > e->max_in) e->max_in = m->ops[k].n_in;
    e->args = calloc(e->max_in + 1, sizeof *e->args);
    const bool ok = e->data && e->in_set && e->out_set && e->block && e->args;
    for (uint32_t i = 0; ok && i < m->n_opnds; i++) {
        const EmuOperand *o = &m->opnds[i];
        if (o->lifetime == EMU_CONST)
            e->data[i] = (void *)o->value;
        else if (o->lifetime == EMU_TEMP)
            e->data[i] = e->block + scratch + compilation->temp_off[i];
    }
    if (!ok) {
        NeuronExecution_free(e);
        return NEURON_OUT_OF_MEMORY;
    }
    *execution = e;
    return NEURON_NO_ERROR;
}

/* A caller-given type must describe the operand exactly (the emulator has no dynamic shapes). */
static bool type_matches(const EmuOperand *o, const NeuronOperandType *t) {
    if (t == NULL) return true;
    if (t->type != o->type || t->dimensionCount != o->rank) return false;
    if (o->rank && t->dimensions == NULL) return false;
    for (uint32_t d = 0; d < o->rank; d++)
        if (t->dimensions[d] != o->dims[d]) return false;
    return t->scale == o->scale && t->zeroPoint == o->zero_point;
}

int NeuronExecution_setInput(NeuronExecution *execution, int32_t index,
                             const NeuronOperandType *type, const void *buffer, size_t length) {
    EMU_TRACE();
    if (execution == NULL || buffer == NULL) return NEURON_UNEXPECTED_NULL;
    const NeuronModel *m = execution->compilation->model;
    if (index < 0 || (uint32_t)index >= m->n_inputs) return NEURON_BAD_DATA;
    const uint32_t op = m->inputs[index];
    if (!type_matches(&m->opnds[op], type) || length != emu_bytes(&m->opnds[op]))
        return NEURON_BAD_DATA;
    execution->data[op] = (void *)buffer; /* read only */
    execution->in_set[index] = true;
    return NEURON_NO_ERROR;
}

int NeuronExecution_setOutput(NeuronExecution *execution, int32_t index,
                              const NeuronOperandType *type, void *buffer, size_t length) {
    EMU_TRACE();
    if (execution == NULL || buffer == NULL) return NEURON_UNEXPECTED_NULL;
    const NeuronModel *m = execution->compilation->model;
    if (index < 0 || (uint32_t)index >= m->n_outputs) return NEURON_BAD_DATA;
    const uint32_t op = m->outputs[index];
    if (!type_matches(&m->opnds[op], type)) return NEURON_BAD_DATA;
    if (length < emu_bytes(&m->opnds[op])) return NEURON_OUTPUT_INSUFFICIENT_SIZE;
    if (length != emu_bytes(&m->opnds[op])) return NEURON_BAD_DATA;
    execution->data[op] = buffer;
    execution->out_set[index] = true;
    return NEURON_NO_ERROR;
}

int NeuronExecution_compute(NeuronExecution *execution) {
    EMU_TRACE();
    return emu_execute(execution);
}

int emu_execute(NeuronExecution *execution) {
    NeuronExecution *e = execution;
    if (e == NULL) return NEURON_UNEXPECTED_NULL;
    const NeuronCompilation *c = e->compilation;
    const NeuronModel *m = c->model;
    for (uint32_t i = 0; i < m->n_inputs; i++)
        if (!e->in_set[i]) return NEURON_BAD_STATE;
    for (uint32_t i = 0; i < m->n_outputs; i++)
        if (!e->out_set[i]) return NEURON_BAD_STATE;
    if (c->apu) emu_apu_begin();
    EmuScratch scratch = {e->scratch, e->scratch_len, c->pool};
    EmuReport report = emu_report_open(c);
    for (uint32_t k = 0; k < m->n_ops; k++) {
        const EmuOperation *op = &m->ops[k];
        if (c->skip != NULL && c->skip[k]) {
            emu_report_skip(&report, k, op->code);
            continue;
        }
        for (uint32_t i = 0; i < op->n_in; i++) e->args[i] = e->data[op->in[i]];
        emu_report_begin(&report);
        emu_kernel(op->code)->eval(c->params[k], e->args, e->data[op->out[0]], &scratch);
        emu_report_op(&report, k, op->code);
    }
    emu_report_close(&report);
    if (c->apu) emu_apu_end();
    e->computed = true;
    return NEURON_NO_ERROR;
}
