/*
 * execution_ext.c: shared memory (NeuronMemory_createFromFd: an mmap of any mappable fd), inputs
 * and outputs bound from it, events, the execution hints, output shapes, the batch calls and the
 * debug report.
 *
 * The emulator computes synchronously: startComputeWithDependencies waits for its dependencies
 * (a sync-fence event: poll until the fence signals), computes, and returns an event that is
 * already signalled with the compute's result; NeuronEvent_wait gives that result. An
 * AHardwareBuffer exists only on Android: on the host the call returns NEURON_BAD_STATE, as the
 * header documents for non-Android builds.
 */
#define _POSIX_C_SOURCE 200809L

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "compilation.h"

struct NeuronMemory {
    uint8_t *map;    /* the mapping, from the page holding `offset` */
    size_t map_len;
    uint8_t *base;   /* map + (offset - page-aligned offset): byte 0 of the memory */
    size_t size;
    int protect;
};

struct NeuronEvent {
    int status;   /* the compute's result; fence events: NEURON_NO_ERROR once signalled */
    int fence_fd; /* -1 unless created from a sync fence (owned dup) */
};

int NeuronMemory_createFromFd(size_t size, int protect, int fd, size_t offset,
                              NeuronMemory **memory) {
    emu_trace(__func__, "%zu %d", size, protect);
    if (memory == NULL) return NEURON_UNEXPECTED_NULL;
    *memory = NULL;
    if (size == 0 || fd < 0 || (protect & ~(PROT_READ | PROT_WRITE)) != 0) return NEURON_BAD_DATA;
    const long page = sysconf(_SC_PAGESIZE);
    const size_t aligned = page > 0 ? offset / (size_t)page * (size_t)page : offset;
    const size_t lead = offset - aligned;
    if (size > SIZE_MAX - lead) return NEURON_BAD_DATA;
    void *map = mmap(NULL, size + lead, protect, MAP_SHARED, fd, (off_t)aligned);
    if (map == MAP_FAILED) return NEURON_BAD_DATA;
    NeuronMemory *m = calloc(1, sizeof *m);
    if (m == NULL) {
        munmap(map, size + lead);
        return NEURON_OUT_OF_MEMORY;
    }
    *m = (NeuronMemory){map, size + lead, (uint8_t *)map + lead, size, protect};
    *memory = m;
    return NEURON_NO_ERROR;
}

int NeuronMemory_createFromAHardwareBuffer(const AHardwareBuffer *ahwb, NeuronMemory **memory) {
    EMU_TRACE();
    if (memory != NULL) *memory = NULL;
    if (ahwb == NULL || memory == NULL) return NEURON_UNEXPECTED_NULL;
    emu_note(__func__, "AHardwareBuffer exists only on Android: use NeuronMemory_createFromFd");
    return NEURON_BAD_STATE;
}

void NeuronMemory_free(NeuronMemory *memory) {
    EMU_TRACE();
    if (memory == NULL) return;
    munmap(memory->map, memory->map_len);
    free(memory);
}

static int bind_memory(NeuronExecution *e, uint32_t index, const NeuronOperandType *type,
                       const NeuronMemory *memory, size_t offset, size_t length, bool input) {
    if (e == NULL || memory == NULL) return NEURON_UNEXPECTED_NULL;
    if (offset > memory->size || length > memory->size - offset) return NEURON_BAD_DATA;
    if (!(memory->protect & (input ? PROT_READ : PROT_WRITE))) return NEURON_BAD_DATA;
    if (index > INT32_MAX) return NEURON_BAD_DATA;
    emu_trace_silence(+1);
    const int rc = input ? NeuronExecution_setInput(e, (int32_t)index, type,
                                                    memory->base + offset, length)
                         : NeuronExecution_setOutput(e, (int32_t)index, type,
                                                     memory->base + offset, length);
    emu_trace_silence(-1);
    return rc;
}

int NeuronExecution_setInputFromMemory(NeuronExecution *execution, uint32_t index,
                                       const NeuronOperandType *type, const NeuronMemory *memory,
                                       size_t offset, size_t length) {
    emu_trace(__func__, "%u %zu %zu", (unsigned)index, offset, length);
    return bind_memory(execution, index, type, memory, offset, length, true);
}

int NeuronExecution_setOutputFromMemory(NeuronExecution *execution, uint32_t index,
                                        const NeuronOperandType *type, const NeuronMemory *memory,
                                        size_t offset, size_t length) {
    emu_trace(__func__, "%u %zu %zu", (unsigned)index, offset, length);
    return bind_memory(execution, index, type, memory, offset, length, false);
}

/* ---- events ---------------------------------------------------------------------------------- */

static NeuronEvent *new_event(int status, int fence_fd) {
    NeuronEvent *ev = malloc(sizeof *ev);
    if (ev != NULL) *ev = (NeuronEvent){status, fence_fd};
    return ev;
}

/* A fence signals by becoming readable; until then (and on a poll error) it is not done. */
static int wait_event(const NeuronEvent *ev) {
    if (ev->fence_fd < 0) return ev->status;
    struct pollfd p = {ev->fence_fd, POLLIN, 0};
    int n;
    do n = poll(&p, 1, -1);
    while (n < 0);
    return (p.revents & (POLLERR | POLLNVAL)) ? NEURON_OP_FAILED : NEURON_NO_ERROR;
}

int NeuronExecution_startComputeWithDependencies(NeuronExecution *execution,
                                                 const NeuronEvent *const *dependencies,
                                                 uint32_t num_dependencies, uint64_t duration,
                                                 NeuronEvent **event) {
    emu_trace(__func__, "%u", (unsigned)num_dependencies);
    (void)duration; /* unused, as the header says */
    if (event != NULL) *event = NULL;
    if (execution == NULL || event == NULL || (num_dependencies && dependencies == NULL))
        return NEURON_UNEXPECTED_NULL;
    for (uint32_t i = 0; i < num_dependencies; i++) {
        if (dependencies[i] == NULL) return NEURON_UNEXPECTED_NULL;
        if (dependencies[i]->fence_fd < 0 && dependencies[i]->status != NEURON_NO_ERROR)
            return NEURON_BAD_STATE; /* a dependency already failed */
    }
    int status = NEURON_NO_ERROR;
    for (uint32_t i = 0; i < num_dependencies && status == NEURON_NO_ERROR; i++)
        status = wait_event(dependencies[i]);
    if (status == NEURON_NO_ERROR) status = emu_execute(execution);
    if (status == NEURON_BAD_STATE) return status; /* inputs or outputs unset: not scheduled */
    *event = new_event(status, -1);
    return *event ? NEURON_NO_ERROR : NEURON_OUT_OF_MEMORY;
}

int NeuronEvent_wait(NeuronEvent *event) {
    EMU_TRACE();
    if (event == NULL) return NEURON_UNEXPECTED_NULL;
    return wait_event(event);
}

void NeuronEvent_free(NeuronEvent *event) {
    EMU_TRACE();
    if (event == NULL) return;
    (void)wait_event(event); /* free waits; freeForce does not */
    if (event->fence_fd >= 0) close(event->fence_fd);
    free(event);
}

void NeuronEvent_freeForce(NeuronEvent *event) {
    EMU_TRACE();
    if (event == NULL) return;
    if (event->fence_fd >= 0) close(event->fence_fd);
    free(event);
}

int NeuronEvent_createFromSyncFenceFd(int sync_fence_fd, NeuronEvent **event) {
    EMU_TRACE();
    if (event == NULL) return NEURON_UNEXPECTED_NULL;
    *event = NULL;
    if (sync_fence_fd < 0) return NEURON_BAD_DATA;
    const int fd = dup(sync_fence_fd); /* the event owns a duplicate, not the caller's fd */
    if (fd < 0) return NEURON_BAD_DATA;
    *event = new_event(NEURON_NO_ERROR, fd);
    if (*event == NULL) close(fd);
    return *event ? NEURON_NO_ERROR : NEURON_OUT_OF_MEMORY;
}

int NeuronEvent_getSyncFenceFd(const NeuronEvent *event, int *sync_fence_fd) {
    EMU_TRACE();
    if (event == NULL || sync_fence_fd == NULL) return NEURON_UNEXPECTED_NULL;
    *sync_fence_fd = event->fence_fd >= 0 ? dup(event->fence_fd) : -1;
    return *sync_fence_fd >= 0 ? NEURON_NO_ERROR : NEURON_BAD_DATA;
}

/* ---- hints and shapes ------------------------------------------------------------------------- */

int NeuronExecution_setBoostHint(NeuronExecution *execution, uint8_t boostValue) {
    emu_trace(__func__, "%u", (unsigned)boostValue);
    if (execution == NULL) return NEURON_UNEXPECTED_NULL;
    if (boostValue > 100) return NEURON_BAD_DATA;
    execution->boost = boostValue;
    execution->boost_set = true;
    return NEURON_NO_ERROR;
}

int NeuronExecution_setCacheFlushHint(NeuronExecution *execution, uint8_t flushHint) {
    emu_trace(__func__, "%u", (unsigned)flushHint);
    if (execution == NULL) return NEURON_UNEXPECTED_NULL;
    if (flushHint & ~(NEURON_CACHE_FLUSH_DISABLE_SYNC_INPUT |
                      NEURON_CACHE_FLUSH_DISABLE_INVALIDATE_OUTPUT))
        return NEURON_BAD_DATA;
    execution->flush_hint = flushHint;
    return NEURON_NO_ERROR;
}

int NeuronExecution_setLoopTimeout(NeuronExecution *execution, uint64_t duration) {
    emu_trace(__func__, "%llu", (unsigned long long)duration);
    if (execution == NULL) return NEURON_UNEXPECTED_NULL;
    emu_trace_silence(+1);
    const uint64_t max = Neuron_getMaximumLoopTimeout();
    emu_trace_silence(-1);
    execution->loop_timeout = duration > max ? max : duration; /* NNAPI clamps to the maximum */
    return NEURON_NO_ERROR;
}

static const EmuOperand *output_of(NeuronExecution *e, int32_t index, int *rc) {
    *rc = e == NULL ? NEURON_UNEXPECTED_NULL : !e->computed ? NEURON_BAD_STATE : NEURON_NO_ERROR;
    if (*rc != NEURON_NO_ERROR) return NULL;
    const NeuronModel *m = e->compilation->model;
    if (index < 0 || (uint32_t)index >= m->n_outputs) {
        *rc = NEURON_BAD_DATA;
        return NULL;
    }
    return &m->opnds[m->outputs[index]];
}

int NeuronExecution_getOutputOperandRank(NeuronExecution *execution, int32_t index,
                                         uint32_t *rank) {
    EMU_TRACE();
    int rc;
    const EmuOperand *o = output_of(execution, index, &rc);
    if (o == NULL) return rc;
    if (rank == NULL) return NEURON_UNEXPECTED_NULL;
    *rank = o->rank;
    return NEURON_NO_ERROR;
}

int NeuronExecution_getOutputOperandDimensions(NeuronExecution *execution, int32_t index,
                                               uint32_t *dimensions) {
    EMU_TRACE();
    int rc;
    const EmuOperand *o = output_of(execution, index, &rc);
    if (o == NULL) return rc;
    if (dimensions == NULL) return NEURON_UNEXPECTED_NULL;
    if (o->rank == 0) return NEURON_BAD_DATA; /* "cannot be a scalar" */
    for (uint32_t d = 0; d < o->rank; d++) dimensions[d] = o->dims[d];
    return NEURON_NO_ERROR;
}

/* ---- batch calls: only on compilations of the matching type ---------------------------------- */

static int of_type(const NeuronExecution *e, CompilationType type) {
    if (e == NULL) return NEURON_UNEXPECTED_NULL;
    return e->compilation->type == type ? NEURON_NO_ERROR : NEURON_BAD_STATE;
}

int NeuronExecution_setRunnerPoolSize(NeuronExecution *execution, uint8_t numRunners) {
    emu_trace(__func__, "%u", (unsigned)numRunners);
    int rc = of_type(execution, COMPILATION_TYPE_BATCHED);
    if (rc == NEURON_NO_ERROR && numRunners == 0) rc = NEURON_BAD_DATA;
    if (rc == NEURON_NO_ERROR) execution->runners = numRunners;
    return rc;
}

int NeuronExecution_setBatchDone(NeuronExecution *execution) {
    EMU_TRACE();
    int rc = of_type(execution, COMPILATION_TYPE_BATCHED);
    if (rc == NEURON_NO_ERROR) execution->batch_done = true;
    return rc;
}

int NeuronExecution_setIODone(NeuronExecution *execution, int idx) {
    emu_trace(__func__, "%d", idx);
    int rc = of_type(execution, COMPILATION_TYPE_EXECUTION_CONTROLLER);
    if (rc == NEURON_NO_ERROR && idx < 0) rc = NEURON_BAD_DATA;
    return rc;
}

/* ---- the debug report ------------------------------------------------------------------------- */

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * UINT64_C(1000000000) + (uint64_t)t.tv_nsec;
}

EmuReport emu_report_open(const NeuronCompilation *c) {
    EmuReport r = {NULL, 0};
    if (c->type == COMPILATION_TYPE_DEBUG_PLUS && c->report_path != NULL)
        r.file = fopen(c->report_path, "a");
    return r;
}

void emu_report_begin(EmuReport *r) {
    if (r->file != NULL) r->t0 = now_ns();
}

void emu_report_op(EmuReport *r, uint32_t index, int32_t code) {
    if (r->file != NULL)
        fprintf(r->file, "%u %d %llu\n", (unsigned)index, (int)code,
                (unsigned long long)(now_ns() - r->t0));
}

void emu_report_skip(EmuReport *r, uint32_t index, int32_t code) {
    if (r->file != NULL) fprintf(r->file, "%u %d 0 skipped\n", (unsigned)index, (int)code);
}

void emu_report_close(EmuReport *r) {
    if (r->file != NULL) fclose(r->file);
    r->file = NULL;
}
