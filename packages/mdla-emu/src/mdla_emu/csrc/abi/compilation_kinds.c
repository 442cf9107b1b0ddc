/*
 * compilation_ext.c: the compilation calls beyond createForDevices: the adapter-chosen kinds,
 * the hints (stored, traced, reported back), padded sizes, the support query on an unfinished
 * compilation, caching, and the compiled-network extension operation.
 *
 * Device choice: NeuronCompilation_create picks the first device (Neuron_getDevice order) that
 * maps every operation and fails with NEURON_UNMAPPABLE at once when none does (the emulator
 * never splits a model or falls back). createWithOptions, createV2 and the createFor{Batch,
 * MultiExecutions,Debug} kinds make the same choice at finish: they accept any finished model, so
 * the failure, if any, comes from NeuronCompilation_finish, as the real adapter does for an AOT
 * compile. The emulator pads nothing: padded sizes and dimensions are the operands' own. The
 * compiled networks (extension route, cache, restoreV2) are network.c's.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "compilation.h"

static char *dup_string(const char *s) {
    const size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL) memcpy(p, s, n);
    return p;
}

int emu_compilation_new(NeuronModel *model, NeuronCompilation **out) {
    if (out != NULL) *out = NULL;
    if (model == NULL || out == NULL) return NEURON_UNEXPECTED_NULL;
    if (!model->finished) return NEURON_BAD_STATE;
    NeuronCompilation *c = calloc(1, sizeof *c);
    if (c == NULL) return NEURON_OUT_OF_MEMORY;
    c->source = model;
    c->preference = NEURON_PREFER_FAST_SINGLE_ANSWER;
    c->priority = NEURON_PRIORITY_MEDIUM;
    c->type = COMPILATION_TYPE_NORMAL;
    *out = c;
    return NEURON_NO_ERROR;
}

void emu_compilation_release_ext(NeuronCompilation *c) {
    free(c->options);
    free(c->opt_string);
    free(c->cache_dir);
    free(c->report_path);
    emu_model_release(c->expanded);
}

int NeuronCompilation_create(NeuronModel *model, NeuronCompilation **compilation) {
    EMU_TRACE();
    int rc = emu_compilation_new(model, compilation);
    if (rc != NEURON_NO_ERROR) return rc;
    NeuronCompilation *c = *compilation;
    /* a model carrying a compiled network maps where that network says, at finish */
    const bool carrier = model->n_ops == 1 && model->ops[0].code == EMU_OP_COMPILED_NETWORK;
    if (!carrier && (rc = emu_choose_device(c, model)) != NEURON_NO_ERROR) {
        emu_note_unmappable(__func__, model, NULL, 0);
        free(c);
        *compilation = NULL;
    }
    return rc;
}

int NeuronCompilation_createV2(NeuronModel *model, CompilationType type, const char *options,
                               NeuronCompilation **compilation) {
    emu_trace(__func__, "%d %s", (int)type, options ? options : "");
    if (type < COMPILATION_TYPE_NORMAL || type > COMPILATION_TYPE_EXECUTION_CONTROLLER) {
        if (compilation != NULL) *compilation = NULL;
        return NEURON_BAD_DATA;
    }
    int rc = emu_compilation_new(model, compilation);
    if (rc != NEURON_NO_ERROR) return rc;
    NeuronCompilation *c = *compilation;
    c->type = type;
    if (type == COMPILATION_TYPE_DEBUG_PLUS && model->report_path != NULL &&
        (c->report_path = dup_string(model->report_path)) == NULL)
        rc = NEURON_OUT_OF_MEMORY;
    if (rc == NEURON_NO_ERROR && options != NULL && (c->options = dup_string(options)) == NULL)
        rc = NEURON_OUT_OF_MEMORY;
    if (rc != NEURON_NO_ERROR) {
        NeuronCompilation_free(c);
        *compilation = NULL;
    }
    return rc;
}

static int create_kind(NeuronModel *model, NeuronCompilation **compilation, CompilationType type,
                       const char *options) {
    emu_trace_silence(+1);
    const int rc = NeuronCompilation_createV2(model, type, options, compilation);
    emu_trace_silence(-1);
    return rc;
}

int NeuronCompilation_createWithOptions(NeuronModel *model, NeuronCompilation **compilation,
                                        const char *options) {
    emu_trace(__func__, "%s", options ? options : "");
    return create_kind(model, compilation, COMPILATION_TYPE_NORMAL, options);
}

int NeuronCompilation_createForBatch(NeuronModel *model, NeuronCompilation **compilation) {
    EMU_TRACE();
    return create_kind(model, compilation, COMPILATION_TYPE_BATCHED, NULL);
}

int NeuronCompilation_createForMultiExecutions(NeuronModel *model,
                                               NeuronCompilation **compilation) {
    EMU_TRACE();
    return create_kind(model, compilation, COMPILATION_TYPE_MULTI_EXECUTIONS, NULL);
}

int NeuronCompilation_createForDebug(NeuronModel *model, NeuronCompilation **compilation) {
    EMU_TRACE();
    return create_kind(model, compilation, COMPILATION_TYPE_DEBUG_PLUS, NULL);
}

/* ---- hints: settable before finish, stored as given ----------------------------------------- */

static int editable(const NeuronCompilation *c) {
    if (c == NULL) return NEURON_UNEXPECTED_NULL;
    return c->finished ? NEURON_BAD_STATE : NEURON_NO_ERROR;
}

int NeuronCompilation_setOptimizationHint(NeuronCompilation *compilation,
                                          uint32_t optimizationCode) {
    emu_trace(__func__, "%u", (unsigned)optimizationCode);
    int rc = editable(compilation);
    const uint32_t known = NEURON_OPTIMIZATION_LOW_LATENCY | NEURON_OPTIMIZATION_DEEP_FUSION |
                           NEURON_OPTIMIZATION_BATCH_PROCESSING;
    if (rc == NEURON_NO_ERROR && (optimizationCode & ~known) != 0) rc = NEURON_BAD_DATA;
    if (rc == NEURON_NO_ERROR) compilation->opt_hint = optimizationCode;
    return rc;
}

int NeuronCompilation_setOptimizationString(NeuronCompilation *compilation,
                                            const char *optimizationString) {
    emu_trace(__func__, "%s", optimizationString ? optimizationString : "(null)");
    int rc = editable(compilation);
    if (rc != NEURON_NO_ERROR) return rc;
    if (optimizationString == NULL) return NEURON_UNEXPECTED_NULL;
    char *copy = dup_string(optimizationString);
    if (copy == NULL) return NEURON_OUT_OF_MEMORY;
    free(compilation->opt_string);
    compilation->opt_string = copy;
    return NEURON_NO_ERROR;
}

int NeuronCompilation_setOnlyAllowOptimizationString(NeuronCompilation *compilation, bool allow) {
    emu_trace(__func__, "%d", (int)allow);
    int rc = editable(compilation);
    if (rc == NEURON_NO_ERROR) compilation->only_opt_string = allow;
    return rc;
}

/* The options the compiler was given: setOptimizationString's, else createWithOptions's; the
 * emulator adds none of its own. The string lives as long as the compilation. */
int NeuronCompilation_getOptimizationString(NeuronCompilation *compilation,
                                            const char **optimizationString) {
    EMU_TRACE();
    if (compilation == NULL || optimizationString == NULL) return NEURON_UNEXPECTED_NULL;
    *optimizationString = compilation->opt_string  ? compilation->opt_string
                          : compilation->options ? compilation->options
                                                 : "";
    return NEURON_NO_ERROR;
}

int NeuronCompilation_setL1MemorySizeKb(NeuronCompilation *compilation, uint32_t sizeKb) {
    emu_trace(__func__, "%u", (unsigned)sizeKb);
    int rc = editable(compilation);
    if (rc == NEURON_NO_ERROR) compilation->l1_kb = sizeKb;
    return rc;
}

int NeuronCompilation_setTrimIOAlignment(NeuronCompilation *compilation, bool enable) {
    emu_trace(__func__, "%d", (int)enable);
    int rc = editable(compilation);
    if (rc == NEURON_NO_ERROR) compilation->trim_io = enable;
    return rc;
}

int NeuronCompilation_setSWDilatedConv(NeuronCompilation *compilation, bool enable) {
    emu_trace(__func__, "%d", (int)enable);
    int rc = editable(compilation);
    if (rc == NEURON_NO_ERROR) compilation->sw_dilated = enable;
    return rc;
}

int NeuronCompilation_setCaching(NeuronCompilation *compilation, const char *cacheDir,
                                 const uint8_t *token) {
    EMU_TRACE();
    int rc = editable(compilation);
    if (rc != NEURON_NO_ERROR) return rc;
    if (cacheDir == NULL || token == NULL) return NEURON_UNEXPECTED_NULL;
    char *copy = dup_string(cacheDir);
    if (copy == NULL) return NEURON_OUT_OF_MEMORY;
    free(compilation->cache_dir);
    compilation->cache_dir = copy;
    memcpy(compilation->token, token, NEURON_BYTE_SIZE_OF_CACHE_TOKEN);
    return NEURON_NO_ERROR;
}

static int finished(const NeuronCompilation *c) {
    if (c == NULL) return NEURON_UNEXPECTED_NULL;
    return c->finished ? NEURON_NO_ERROR : NEURON_BAD_STATE;
}

int NeuronCompilation_getPreference(NeuronCompilation *compilation, int *preference) {
    EMU_TRACE();
    int rc = finished(compilation);
    if (rc == NEURON_NO_ERROR && preference == NULL) rc = NEURON_UNEXPECTED_NULL;
    if (rc == NEURON_NO_ERROR) *preference = compilation->preference;
    return rc;
}

int NeuronCompilation_getPriority(NeuronCompilation *compilation, int *priority) {
    EMU_TRACE();
    int rc = finished(compilation);
    if (rc == NEURON_NO_ERROR && priority == NULL) rc = NEURON_UNEXPECTED_NULL;
    if (rc == NEURON_NO_ERROR) *priority = compilation->priority;
    return rc;
}

/* ---- padded I/O: the emulator's are the operands' own ---------------------------------------- */

static const EmuOperand *io_operand(NeuronCompilation *c, int32_t index, bool input, int *rc) {
    *rc = finished(c);
    if (*rc != NEURON_NO_ERROR) return NULL;
    const NeuronModel *m = c->model;
    const uint32_t n = input ? m->n_inputs : m->n_outputs;
    if (index < 0 || (uint32_t)index >= n) {
        *rc = NEURON_BAD_DATA;
        return NULL;
    }
    return &m->opnds[input ? m->inputs[index] : m->outputs[index]];
}

static int padded_dims(NeuronCompilation *c, int32_t index, uint32_t *dims, bool input) {
    int rc;
    const EmuOperand *o = io_operand(c, index, input, &rc);
    if (o == NULL) return rc;
    if (dims == NULL) return NEURON_UNEXPECTED_NULL;
    for (uint32_t d = 0; d < o->rank; d++) dims[d] = o->dims[d];
    return NEURON_NO_ERROR;
}

static int padded_size(NeuronCompilation *c, int32_t index, size_t *size, bool input) {
    int rc;
    const EmuOperand *o = io_operand(c, index, input, &rc);
    if (o == NULL) return rc;
    if (size == NULL) return NEURON_UNEXPECTED_NULL;
    *size = emu_bytes(o);
    return NEURON_NO_ERROR;
}

int NeuronCompilation_getInputPaddedDimensions(NeuronCompilation *compilation, int32_t index,
                                               uint32_t *dimensions) {
    EMU_TRACE();
    return padded_dims(compilation, index, dimensions, true);
}

int NeuronCompilation_getOutputPaddedDimensions(NeuronCompilation *compilation, int32_t index,
                                                uint32_t *dimensions) {
    EMU_TRACE();
    return padded_dims(compilation, index, dimensions, false);
}

int NeuronCompilation_getInputPaddedSize(NeuronCompilation *compilation, int32_t index,
                                         size_t *size) {
    EMU_TRACE();
    return padded_size(compilation, index, size, true);
}

int NeuronCompilation_getOutputPaddedSize(NeuronCompilation *compilation, int32_t index,
                                          size_t *size) {
    EMU_TRACE();
    return padded_size(compilation, index, size, false);
}

/* ---- the support query on an unfinished compilation ----------------------------------------- */

/* Per operation (LiteRT partitions with it): true when the operation maps on the compilation's
 * devices (for the adapter-chosen kinds, on any device). Operations the emulator has no kernel
 * for, LiteRT's placeholder NEURON_UNKNOWN among them, are false; the others are not affected. */
int NeuronCompilation_getSupportedOperations(NeuronCompilation *compilation,
                                             uint32_t operationCount, bool *supported) {
    EMU_TRACE();
    if (compilation == NULL || supported == NULL) return NEURON_UNEXPECTED_NULL;
    if (compilation->finished) return NEURON_BAD_STATE;
    const NeuronModel *m = compilation->source;
    if (operationCount != m->n_ops) return NEURON_BAD_DATA;
    const EmuTargetDevice *all[EMU_MAX_DEVICES];
    const EmuTargetDevice *const *devs = compilation->devs;
    uint32_t n = compilation->n_devs;
    if (n == 0) {
        emu_trace_silence(+1);
        uint32_t count = 0;
        Neuron_getDeviceCount(&count);
        for (uint32_t i = 0; i < count && i < EMU_MAX_DEVICES; i++) {
            NeuronDevice *d = NULL;
            Neuron_getDevice(i, &d);
            all[n++] = emu_device_spec(d);
        }
        emu_trace_silence(-1);
        devs = all;
    }
    for (uint32_t k = 0; k < m->n_ops; k++) {
        supported[k] = false;
        for (uint32_t i = 0; i < n && !supported[k]; i++)
            supported[k] = emu_op_supported(devs[i], m, &m->ops[k]);
    }
    return NEURON_NO_ERROR;
}
