/*
 * fake_adapter.c: a tiny stand-in for a Neuron Adapter, for testing mdla-engine's use of the ABI
 * (not its arithmetic: that is the emulator's job). It implements the functions of
 * neuron_abi.h, logs each model-building call to $FAKE_NEURON_LOG, exposes devices mtk-mdla,
 * mtk-gpu and mtk-dsp, treats the op codes in $FAKE_NEURON_UNSUPPORTED (comma list) as
 * unsupported on mtk-mdla with an all-or-nothing report, like the real one, and computes each
 * output k as in0[i % len(in0)] + k + 1. Built with -DFAKE_OMIT_COMPUTE it lacks
 * NeuronExecution_compute (to test missing-symbol reporting).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuron_abi.h"

#define CAP 4096

struct NeuronDevice { const char *name; };
static NeuronDevice devices[] = {{"mtk-mdla"}, {"mtk-gpu"}, {"mtk-dsp"}};

struct NeuronModel {
    uint32_t n_operands, n_ops, n_in, n_out;
    size_t size[CAP];
    int32_t code[CAP];
    uint32_t in[CAP], out[CAP];
    bool finished;
};
struct NeuronCompilation { NeuronModel *model; bool finished; };
struct NeuronExecution { NeuronCompilation *c; const int8_t *in[16]; size_t in_len[16]; int8_t *out[16]; size_t out_len[16]; };

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void logf_(const char *fmt, ...) {
    const char *path = getenv("FAKE_NEURON_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

static bool unsupported(int32_t code) {
    const char *list = getenv("FAKE_NEURON_UNSUPPORTED");
    char buf[256];
    if (!list) return false;
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
        if (atoi(t) == code) return true;
    return false;
}

int Neuron_getVersion(NeuronRuntimeVersion *v) { v->major = 8; v->minor = 2; v->patch = 0; return 0; }
int Neuron_getDeviceCount(uint32_t *n) { *n = 3; return 0; }
int Neuron_getDevice(uint32_t i, NeuronDevice **d) { if (i >= 3) return NEURON_BAD_DATA; *d = &devices[i]; return 0; }
int NeuronDevice_getName(const NeuronDevice *d, const char **name) { *name = d->name; return 0; }
int NeuronModel_create(NeuronModel **m) { *m = calloc(1, sizeof **m); return *m ? 0 : NEURON_OUT_OF_MEMORY; }
void NeuronModel_free(NeuronModel *m) { free(m); }

int NeuronModel_addOperand(NeuronModel *m, const NeuronOperandType *t) {
    if (m->finished || m->n_operands == CAP) return NEURON_BAD_STATE;
    size_t n = 1;
    char dims[256] = "";
    for (uint32_t k = 0; k < t->dimensionCount; k++) {
        n *= t->dimensions[k];
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%u", k ? "," : "", t->dimensions[k]);
    }
    m->size[m->n_operands] = n * (t->type == NEURON_TENSOR_INT32 ? 4 : 1);
    logf_("operand %u type=%d dims=[%s] scale=%g zp=%d", m->n_operands, t->type, dims, (double)t->scale, t->zeroPoint);
    m->n_operands++;
    return 0;
}

int NeuronModel_setOperandValue(NeuronModel *m, int32_t i, const void *buf, size_t len) {
    if (i < 0 || (uint32_t)i >= m->n_operands || !buf) return NEURON_BAD_DATA;
    if (len == 4) {
        int32_t v;
        memcpy(&v, buf, 4);
        logf_("value %d len=4 i32=%d", i, v);
    } else if (len == 1) logf_("value %d len=1 byte=%d", i, *(const uint8_t *)buf);
    else logf_("value %d len=%zu", i, len);
    return 0;
}

int NeuronModel_setOperandSymmPerChannelQuantParams(NeuronModel *m, int32_t i, const NeuronSymmPerChannelQuantParams *p) {
    if (i < 0 || (uint32_t)i >= m->n_operands) return NEURON_BAD_DATA;
    logf_("perchannel %d dim=%u scales=%u", i, p->channelDim, p->scaleCount);
    return 0;
}

static void log_list(const char *what, uint32_t n, const uint32_t *v, char *out, size_t size) {
    out[0] = '\0';
    for (uint32_t k = 0; k < n; k++) snprintf(out + strlen(out), size - strlen(out), "%s%u", k ? "," : "", v[k]);
    (void)what;
}

int NeuronModel_addOperation(NeuronModel *m, NeuronOperationType code, uint32_t ni, const uint32_t *in, uint32_t no, const uint32_t *out) {
    char a[1024], b[256];
    for (uint32_t k = 0; k < ni; k++) if (in[k] >= m->n_operands) return NEURON_BAD_DATA;
    for (uint32_t k = 0; k < no; k++) if (out[k] >= m->n_operands) return NEURON_BAD_DATA;
    if (code == 9999) return NEURON_BAD_DATA;
    m->code[m->n_ops++] = code;
    log_list("in", ni, in, a, sizeof a);
    log_list("out", no, out, b, sizeof b);
    logf_("operation code=%d in=[%s] out=[%s]", code, a, b);
    return 0;
}

int NeuronModel_identifyInputsAndOutputs(NeuronModel *m, uint32_t ni, const uint32_t *in, uint32_t no, const uint32_t *out) {
    char a[1024], b[1024];
    if (ni > 16 || no > 16) return NEURON_BAD_DATA;
    m->n_in = ni;
    m->n_out = no;
    memcpy(m->in, in, ni * sizeof *in);
    memcpy(m->out, out, no * sizeof *out);
    log_list("in", ni, in, a, sizeof a);
    log_list("out", no, out, b, sizeof b);
    logf_("identify in=[%s] out=[%s]", a, b);
    return 0;
}

int NeuronModel_finish(NeuronModel *m) { m->finished = true; return 0; }

int NeuronModel_getSupportedOperationsForDevices(const NeuronModel *m, const NeuronDevice *const *d, uint32_t nd, bool *ok) {
    bool mdla_only = nd == 1 && d[0] == &devices[0], any_bad = false;
    for (uint32_t i = 0; i < m->n_ops; i++) {
        ok[i] = !(mdla_only && unsupported(m->code[i]));
        any_bad |= !ok[i];
    }
    if (any_bad) for (uint32_t i = 0; i < m->n_ops; i++) ok[i] = false; /* all-or-nothing */
    return 0;
}

int NeuronCompilation_createForDevices(NeuronModel *m, const NeuronDevice *const *d, uint32_t nd, NeuronCompilation **c) {
    char names[256] = "";
    bool mdla_only = true;
    for (uint32_t k = 0; k < nd; k++) {
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? "," : "", d[k]->name);
        mdla_only &= d[k] == &devices[0];
    }
    logf_("compile devices=%s", names);
    for (uint32_t i = 0; mdla_only && i < m->n_ops; i++) if (unsupported(m->code[i])) return NEURON_UNMAPPABLE;
    *c = calloc(1, sizeof **c);
    (*c)->model = m;
    return 0;
}

int NeuronCompilation_setPreference(NeuronCompilation *c, int32_t p) { (void)c; logf_("preference %d", p); return 0; }
int NeuronCompilation_setPriority(NeuronCompilation *c, int p) { (void)c; logf_("priority %d", p); return 0; }
int NeuronCompilation_finish(NeuronCompilation *c) { c->finished = true; return 0; }
void NeuronCompilation_free(NeuronCompilation *c) { free(c); }

int NeuronCompilation_getCompiledNetworkSize(NeuronCompilation *c, size_t *size) { (void)c; *size = 8 + sizeof(NeuronModel); return 0; }
int NeuronCompilation_storeCompiledNetwork(NeuronCompilation *c, void *buf, const size_t size) {
    if (size != 8 + sizeof(NeuronModel)) return NEURON_BAD_DATA;
    memcpy(buf, "FAKENET1", 8);
    memcpy((char *)buf + 8, c->model, sizeof(NeuronModel));
    logf_("store %zu", size);
    return 0;
}

int NeuronModel_restoreFromCompiledNetwork(NeuronModel **m, NeuronCompilation **c, const void *buf, const size_t size) {
    if (size != 8 + sizeof(NeuronModel) || memcmp(buf, "FAKENET1", 8) != 0) return NEURON_BAD_DATA;
    *m = malloc(sizeof **m);
    memcpy(*m, (const char *)buf + 8, sizeof **m);
    *c = calloc(1, sizeof **c);
    (*c)->model = *m; /* the caller owns the restored model (it outlives the compilation) */
    (*c)->finished = true;
    logf_("restore %zu", size);
    return 0;
}

int NeuronExecution_create(NeuronCompilation *c, NeuronExecution **e) {
    if (!c->finished) return NEURON_BAD_STATE;
    *e = calloc(1, sizeof **e);
    (*e)->c = c;
    return 0;
}
void NeuronExecution_free(NeuronExecution *e) { free(e); }

int NeuronExecution_setInput(NeuronExecution *e, int32_t i, const NeuronOperandType *t, const void *buf, size_t len) {
    const NeuronModel *m = e->c->model;
    if (t || i < 0 || (uint32_t)i >= m->n_in || len != m->size[m->in[i]]) return NEURON_BAD_DATA;
    e->in[i] = buf;
    e->in_len[i] = len;
    return 0;
}

int NeuronExecution_setOutput(NeuronExecution *e, int32_t i, const NeuronOperandType *t, void *buf, size_t len) {
    const NeuronModel *m = e->c->model;
    if (t || i < 0 || (uint32_t)i >= m->n_out || len != m->size[m->out[i]]) return NEURON_BAD_DATA;
    e->out[i] = buf;
    e->out_len[i] = len;
    return 0;
}

#ifndef FAKE_OMIT_COMPUTE
int NeuronExecution_compute(NeuronExecution *e) {
    const NeuronModel *m = e->c->model;
    for (uint32_t k = 0; k < m->n_out; k++) {
        if (!e->out[k]) return NEURON_BAD_STATE;
        for (size_t i = 0; i < e->out_len[k]; i++)
            e->out[k][i] = (int8_t)((m->n_in && e->in_len[0] ? e->in[0][i % e->in_len[0]] : 0) + (int)k + 1);
    }
    return 0;
}
#endif
