/*
 * compilation.c: NeuronCompilation_* and the compiled-network blob.
 *
 * createForDevices compiles for the named devices only: when an operation maps on none of them
 * it fails with NEURON_UNMAPPABLE, with no CPU fallback (silicon fact 5); finish checks again.
 * finish snapshots the model (large values were kept by pointer until now), fixes the arithmetic
 * (numerics.c: MdlaEmu_setRounding's rounding, the target's accumulator) and freezes every
 * kernel's params.
 *
 * The compiled network (getCompiledNetworkSize/storeCompiledNetwork) is an adapter cache blob,
 * restorable only with NeuronModel_restoreFromCompiledNetwork (silicon fact 10):
 *     "MDLAEMUC" | u32 version | u32 rounding | u64 payload length | u64 FNV-1a-64 of payload |
 *     payload: devices, preference, priority, operands (type, dims, quant, per-channel scales,
 *              values), operations, model inputs and outputs; little-endian fixed-width fields.
 * A blob with another magic, a bad length or checksum, or a payload that does not rebuild into
 * a valid model is NEURON_BAD_DATA; another version is NEURON_BAD_VERSION.
 */
#include <stdlib.h>
#include <string.h>

#include "compilation.h"
#include "mdla_ops.h"

static const char BLOB_MAGIC[8] = {'M', 'D', 'L', 'A', 'E', 'M', 'U', 'C'};
#define BLOB_VERSION 1u
#define BLOB_HEADER 32u


static void release_params(NeuronCompilation *c) {
    if (c->params != NULL && c->model != NULL) {
        for (uint32_t k = 0; k < c->model->n_ops; k++) {
            const EmuKernel *kern = emu_kernel(c->model->ops[k].code);
            if (kern != NULL && c->params[k] != NULL) kern->release(c->params[k]);
        }
    }
    free(c->params);
    c->params = NULL;
    free(c->skip);
    c->skip = NULL;
    free(c->temp_off);
    c->temp_off = NULL;
}

int NeuronCompilation_createForDevices(NeuronModel *model, const NeuronDevice *const *devices,
                                       uint32_t numDevices, NeuronCompilation **compilation) {
    EMU_TRACE();
    if (compilation != NULL) *compilation = NULL;
    if (model == NULL || devices == NULL || compilation == NULL) return NEURON_UNEXPECTED_NULL;
    if (!model->finished) return NEURON_BAD_STATE;
    if (numDevices == 0 || numDevices > EMU_MAX_DEVICES) return NEURON_BAD_DATA;
    NeuronCompilation *c = calloc(1, sizeof *c);
    if (c == NULL) return NEURON_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < numDevices; i++) {
        c->devs[i] = emu_device_spec(devices[i]);
        if (c->devs[i] == NULL) {
            free(c);
            return NEURON_BAD_DATA;
        }
        c->dev_index[i] = devices[i]->index;
        c->apu = c->apu || emu_device_is_apu(c->devs[i]);
    }
    c->n_devs = numDevices;
    if (!emu_model_mappable(model, c->devs, numDevices)) {
        emu_note_unmappable(__func__, model, c->devs, numDevices);
        free(c);
        return NEURON_UNMAPPABLE; /* no fallback to the CPU */
    }
    c->source = model;
    c->preference = NEURON_PREFER_FAST_SINGLE_ANSWER;
    c->priority = NEURON_PRIORITY_MEDIUM;
    *compilation = c;
    return NEURON_NO_ERROR;
}

int NeuronCompilation_setPreference(NeuronCompilation *compilation, int32_t preference) {
    emu_trace(__func__, "%d", (int)preference);
    if (compilation == NULL) return NEURON_UNEXPECTED_NULL;
    if (compilation->finished) return NEURON_BAD_STATE;
    if (preference < NEURON_PREFER_LOW_POWER || preference > NEURON_PREFER_TURBO_BOOST)
        return NEURON_BAD_DATA;
    compilation->preference = preference;
    return NEURON_NO_ERROR;
}

int NeuronCompilation_setPriority(NeuronCompilation *compilation, int priority) {
    emu_trace(__func__, "%d", priority);
    if (compilation == NULL) return NEURON_UNEXPECTED_NULL;
    if (compilation->finished) return NEURON_BAD_STATE;
    if (priority != NEURON_PRIORITY_LOW && priority != NEURON_PRIORITY_MEDIUM &&
        priority != NEURON_PRIORITY_HIGH)
        return NEURON_BAD_DATA;
    compilation->priority = priority;
    return NEURON_NO_ERROR;
}

int NeuronCompilation_finish(NeuronCompilation *compilation) {
    EMU_TRACE();
    NeuronCompilation *c = compilation;
    if (c == NULL) return NEURON_UNEXPECTED_NULL;
    if (c->finished) return NEURON_BAD_STATE;
    int rc = emu_check_platform(__func__);
    if (rc == NEURON_NO_ERROR) rc = emu_expand_extension(c);
    if (rc != NEURON_NO_ERROR) return rc;
    const bool cached = emu_cache_load(c);
    if (c->n_devs == 0 && (rc = emu_choose_device(c, c->source)) != NEURON_NO_ERROR) {
        emu_note_unmappable(__func__, c->source, NULL, 0);
        return rc;
    }
    if (!emu_model_mappable(c->source, c->devs, c->n_devs)) {
        emu_note_unmappable(__func__, c->source, c->devs, c->n_devs);
        return NEURON_UNMAPPABLE;
    }
    c->model = emu_model_clone(c->source);
    if (c->model == NULL) return NEURON_OUT_OF_MEMORY;
    c->num = emu_numerics(c);
    c->params = calloc(c->model->n_ops ? c->model->n_ops : 1, sizeof *c->params);
    if (c->params == NULL) {
        emu_model_release(c->model);
        c->model = NULL;
        return NEURON_OUT_OF_MEMORY;
    }
    c->scratch = 0;
    for (uint32_t k = 0; k < c->model->n_ops; k++) {
        const EmuKernel *kern = emu_kernel(c->model->ops[k].code);
        rc = kern->prepare(c->model, &c->model->ops[k], c->num, &c->params[k]);
        if (rc != NEURON_NO_ERROR) {
            emu_note(__func__, "operation %u (%s) does not compile with this compilation's "
                     "arithmetic", k, neuron_op_name(c->model->ops[k].code));
            release_params(c);
            emu_model_release(c->model);
            c->model = NULL;
            return rc;
        }
        const size_t need = kern->scratch_bytes ? kern->scratch_bytes(c->params[k]) : 0;
        if (need > c->scratch) c->scratch = need;
    }
    c->skip = emu_plan_skips(c->model, c->params);
    c->temp_off = emu_arena_plan(c->model, &c->arena);
    if (c->temp_off == NULL) {
        release_params(c);
        emu_model_release(c->model);
        c->model = NULL;
        return NEURON_OUT_OF_MEMORY;
    }
    c->finished = true;
    if (!cached) emu_cache_store(c);
    return NEURON_NO_ERROR;
}

void NeuronCompilation_free(NeuronCompilation *compilation) {
    EMU_TRACE();
    if (compilation == NULL) return;
    emu_pool_release(compilation->pool);
    release_params(compilation);
    emu_model_release(compilation->model);
    emu_compilation_release_ext(compilation);
    free(compilation->spare);
    free(compilation);
}

/* ---- the blob ------------------------------------------------------------------------------- */

typedef struct {
    uint8_t *buf; /* NULL: only count */
    size_t len;
} Writer;

static void put(Writer *w, const void *p, size_t n) {
    if (w->buf != NULL && n) memcpy(w->buf + w->len, p, n);
    w->len += n;
}
static void put_u32(Writer *w, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(w, b, 4);
}
static void put_u64(Writer *w, uint64_t v) {
    put_u32(w, (uint32_t)v);
    put_u32(w, (uint32_t)(v >> 32));
}
static void put_f32(Writer *w, float f) {
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(w, v);
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(1099511628211);
    return h;
}

static void write_payload(const NeuronCompilation *c, Writer *w) {
    const NeuronModel *m = c->model;
    put_u32(w, c->n_devs);
    for (uint32_t i = 0; i < c->n_devs; i++) put_u32(w, c->dev_index[i]);
    put_u32(w, (uint32_t)c->preference);
    put_u32(w, (uint32_t)c->priority);
    put_u32(w, m->n_opnds);
    for (uint32_t i = 0; i < m->n_opnds; i++) {
        const EmuOperand *o = &m->opnds[i];
        put_u32(w, (uint32_t)o->type);
        put_u32(w, o->rank);
        for (uint32_t d = 0; d < o->rank; d++) put_u32(w, o->dims[d]);
        put_f32(w, o->scale);
        put_u32(w, (uint32_t)o->zero_point);
        put_u32(w, o->channel_dim);
        put_u32(w, o->channel_count);
        for (uint32_t k = 0; k < o->channel_count; k++) put_f32(w, o->channel_scales[k]);
        const bool value = o->lifetime == EMU_CONST;
        put_u32(w, value ? (o->omitted ? 2u : 1u) : 0u);
        put_u64(w, value ? o->value_len : 0);
        if (value) put(w, o->value, o->value_len);
    }
    put_u32(w, m->n_ops);
    for (uint32_t k = 0; k < m->n_ops; k++) {
        const EmuOperation *op = &m->ops[k];
        put_u32(w, (uint32_t)op->code);
        put_u32(w, op->n_in);
        for (uint32_t i = 0; i < op->n_in; i++) put_u32(w, op->in[i]);
        put_u32(w, op->n_out);
        for (uint32_t i = 0; i < op->n_out; i++) put_u32(w, op->out[i]);
    }
    put_u32(w, m->n_inputs);
    for (uint32_t i = 0; i < m->n_inputs; i++) put_u32(w, m->inputs[i]);
    put_u32(w, m->n_outputs);
    for (uint32_t i = 0; i < m->n_outputs; i++) put_u32(w, m->outputs[i]);
}

int NeuronCompilation_getCompiledNetworkSize(NeuronCompilation *compilation, size_t *size) {
    EMU_TRACE();
    if (compilation == NULL || size == NULL) return NEURON_UNEXPECTED_NULL;
    if (!compilation->finished) return NEURON_BAD_STATE;
    Writer w = {NULL, 0};
    write_payload(compilation, &w);
    *size = BLOB_HEADER + w.len;
    return NEURON_NO_ERROR;
}

int NeuronCompilation_storeCompiledNetwork(NeuronCompilation *compilation, void *buffer,
                                           const size_t size) {
    EMU_TRACE();
    if (compilation == NULL || buffer == NULL) return NEURON_UNEXPECTED_NULL;
    if (!compilation->finished) return NEURON_BAD_STATE;
    Writer count = {NULL, 0};
    write_payload(compilation, &count);
    if (size < BLOB_HEADER + count.len) return NEURON_BAD_DATA;
    uint8_t *out = buffer;
    Writer w = {out + BLOB_HEADER, 0};
    write_payload(compilation, &w);
    Writer h = {out, 0};
    put(&h, BLOB_MAGIC, 8);
    put_u32(&h, BLOB_VERSION);
    put_u32(&h, (uint32_t)compilation->num.rounding);
    put_u64(&h, w.len);
    put_u64(&h, fnv1a(out + BLOB_HEADER, w.len));
    return NEURON_NO_ERROR;
}

/* ---- restore: rebuild the model through the public API (so it validates like any model) --- */

typedef struct {
    const uint8_t *p;
    size_t len, at;
    bool bad;
} Reader;

static const uint8_t *take(Reader *r, size_t n) {
    if (r->bad || n > r->len - r->at) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p + r->at;
    r->at += n;
    return p;
}
static uint32_t get_u32(Reader *r) {
    const uint8_t *b = take(r, 4);
    return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24
             : 0;
}
static uint64_t get_u64(Reader *r) {
    const uint64_t lo = get_u32(r);
    return lo | (uint64_t)get_u32(r) << 32;
}
static float get_f32(Reader *r) {
    const uint32_t v = get_u32(r);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

/* A bounded count: each item needs at least `min_bytes` more bytes of the payload. */
static uint32_t get_count(Reader *r, size_t min_bytes) {
    const uint32_t n = get_u32(r);
    if (!r->bad && (size_t)n * min_bytes > r->len - r->at) r->bad = true;
    return r->bad ? 0 : n;
}

static int rebuild(Reader *r, NeuronModel *m, const NeuronDevice **devs, uint32_t *n_devs,
                   int32_t *pref, int32_t *prio) {
    *n_devs = get_count(r, 4);
    if (r->bad || *n_devs == 0 || *n_devs > EMU_MAX_DEVICES) return NEURON_BAD_DATA;
    for (uint32_t i = 0; i < *n_devs; i++) {
        NeuronDevice *d = NULL;
        if (Neuron_getDevice(get_u32(r), &d) != NEURON_NO_ERROR) return NEURON_BAD_DATA;
        devs[i] = d;
    }
    *pref = (int32_t)get_u32(r);
    *prio = (int32_t)get_u32(r);
    const uint32_t n_opnds = get_count(r, 28);
    for (uint32_t i = 0; i < n_opnds && !r->bad; i++) {
        uint32_t dims[EMU_MAX_RANK];
        NeuronOperandType t = {(int32_t)get_u32(r), get_u32(r), dims, 0.0f, 0};
        if (t.dimensionCount > EMU_MAX_RANK) return NEURON_BAD_DATA;
        for (uint32_t d = 0; d < t.dimensionCount; d++) dims[d] = get_u32(r);
        t.scale = get_f32(r);
        t.zeroPoint = (int32_t)get_u32(r);
        const uint32_t channel_dim = get_u32(r), n_scales = get_count(r, 4);
        const uint8_t *scales = take(r, (size_t)n_scales * 4);
        const uint32_t value = get_u32(r);
        const uint64_t value_len = get_u64(r);
        const uint8_t *bytes = value_len <= r->len ? take(r, (size_t)value_len) : NULL;
        if (r->bad || (value == 0 && value_len) || value > 2) return NEURON_BAD_DATA;
        int rc = NeuronModel_addOperand(m, &t);
        if (rc == NEURON_NO_ERROR && n_scales) {
            float *s = malloc((size_t)n_scales * sizeof *s);
            if (s == NULL) return NEURON_OUT_OF_MEMORY;
            memcpy(s, scales, (size_t)n_scales * 4); /* little-endian hosts, as the writer */
            NeuronSymmPerChannelQuantParams q = {channel_dim, n_scales, s};
            rc = NeuronModel_setOperandSymmPerChannelQuantParams(m, (int32_t)i, &q);
            free(s);
        }
        if (rc == NEURON_NO_ERROR && value)
            rc = NeuronModel_setOperandValue(m, (int32_t)i, value == 2 ? NULL : bytes,
                                             value == 2 ? 0 : (size_t)value_len);
        if (rc != NEURON_NO_ERROR) return rc == NEURON_OUT_OF_MEMORY ? rc : NEURON_BAD_DATA;
    }
    const uint32_t n_ops = get_count(r, 12);
    for (uint32_t k = 0; k < n_ops && !r->bad; k++) {
        const int32_t code = (int32_t)get_u32(r);
        const uint32_t n_in = get_count(r, 4);
        const uint8_t *in = take(r, (size_t)n_in * 4);
        const uint32_t n_out = get_count(r, 4);
        const uint8_t *out = take(r, (size_t)n_out * 4);
        if (r->bad) return NEURON_BAD_DATA;
        uint32_t *idx = malloc(((size_t)n_in + n_out + 1) * sizeof *idx);
        if (idx == NULL) return NEURON_OUT_OF_MEMORY;
        memcpy(idx, in, (size_t)n_in * 4);
        memcpy(idx + n_in, out, (size_t)n_out * 4);
        int rc = NeuronModel_addOperation(m, code, n_in, idx, n_out, idx + n_in);
        free(idx);
        if (rc != NEURON_NO_ERROR) return NEURON_BAD_DATA;
    }
    uint32_t *io[2] = {NULL, NULL}, n_io[2] = {0, 0};
    for (int s = 0; s < 2 && !r->bad; s++) {
        n_io[s] = get_count(r, 4);
        const uint8_t *p = take(r, (size_t)n_io[s] * 4);
        io[s] = malloc(((size_t)n_io[s] + 1) * sizeof(uint32_t));
        if (io[s] != NULL && p != NULL) memcpy(io[s], p, (size_t)n_io[s] * 4);
    }
    int rc = r->bad || io[0] == NULL || io[1] == NULL || r->at != r->len
                 ? NEURON_BAD_DATA
                 : NeuronModel_identifyInputsAndOutputs(m, n_io[0], io[0], n_io[1], io[1]);
    free(io[0]);
    free(io[1]);
    if (rc == NEURON_NO_ERROR) rc = NeuronModel_finish(m);
    return rc == NEURON_NO_ERROR || rc == NEURON_OUT_OF_MEMORY ? rc : NEURON_BAD_DATA;
}

int emu_restore_model(const void *buffer, size_t size, NeuronModel **model,
                      const NeuronDevice **devs, uint32_t *n_devs, int32_t *pref, int32_t *prio) {
    *model = NULL;
    const uint8_t *b = buffer;
    if (size < BLOB_HEADER || memcmp(b, BLOB_MAGIC, 8) != 0) return NEURON_BAD_DATA;
    Reader h = {b, BLOB_HEADER, 8, false};
    const uint32_t version = get_u32(&h);
    (void)get_u32(&h);
    const uint64_t len = get_u64(&h), sum = get_u64(&h);
    if (version != BLOB_VERSION) return NEURON_BAD_VERSION;
    if (len != size - BLOB_HEADER || fnv1a(b + BLOB_HEADER, (size_t)len) != sum)
        return NEURON_BAD_DATA;
    NeuronModel *built = NULL;
    emu_trace_silence(+1); /* the rebuild's API calls are the emulator's, not the client's */
    int rc = NeuronModel_create(&built);
    if (rc == NEURON_NO_ERROR) {
        Reader r = {b + BLOB_HEADER, (size_t)len, 0, false};
        rc = rebuild(&r, built, devs, n_devs, pref, prio);
    }
    /* the rebuilt model may point into `buffer`: give the caller one that owns its values */
    NeuronModel *owned = rc == NEURON_NO_ERROR ? emu_model_clone(built) : NULL;
    NeuronModel_free(built);
    emu_trace_silence(-1);
    if (rc != NEURON_NO_ERROR) return rc;
    if (owned == NULL) return NEURON_OUT_OF_MEMORY;
    *model = owned;
    return NEURON_NO_ERROR;
}

int NeuronModel_restoreFromCompiledNetwork(NeuronModel **model, NeuronCompilation **compilation,
                                           const void *buffer, const size_t size) {
    EMU_TRACE();
    if (model == NULL || compilation == NULL || buffer == NULL) return NEURON_UNEXPECTED_NULL;
    *model = NULL;
    *compilation = NULL;
    const NeuronDevice *devs[EMU_MAX_DEVICES];
    uint32_t n_devs = 0;
    int32_t pref = 0, prio = 0;
    NeuronModel *owned = NULL;
    int rc = emu_restore_model(buffer, size, &owned, devs, &n_devs, &pref, &prio);
    if (rc != NEURON_NO_ERROR) return rc;
    NeuronCompilation *c = NULL;
    emu_trace_silence(+1);
    rc = NeuronCompilation_createForDevices(owned, devs, n_devs, &c);
    if (rc == NEURON_NO_ERROR) rc = NeuronCompilation_setPreference(c, pref);
    if (rc == NEURON_NO_ERROR) rc = NeuronCompilation_setPriority(c, prio);
    if (rc == NEURON_NO_ERROR) rc = MdlaEmu_setRounding(c, emu_blob_rounding(buffer, size));
    if (rc == NEURON_NO_ERROR) rc = NeuronCompilation_finish(c);
    emu_trace_silence(-1);
    if (rc != NEURON_NO_ERROR) {
        NeuronCompilation_free(c);
        NeuronModel_free(owned);
        return rc == NEURON_UNMAPPABLE || rc == NEURON_OUT_OF_MEMORY ? rc : NEURON_BAD_DATA;
    }
    *model = owned;
    *compilation = c;
    return NEURON_NO_ERROR;
}
