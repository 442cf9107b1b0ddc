/* engine_run.c: mdla-engine's build, support report, compilation, cache and execution. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "mdla_ops.h"
#include "report.h"

NeuronModel *build(engine *e) {
    static const char *const names[] = {
        "NeuronModel_create", "NeuronModel_free", "NeuronModel_addOperand",
        "NeuronModel_setOperandValue", "NeuronModel_setOperandSymmPerChannelQuantParams",
        "NeuronModel_addOperation", "NeuronModel_identifyInputsAndOutputs", "NeuronModel_finish",
        NULL};
    require(e, names);
    uint32_t n_ops = e->opt.ops < 0 || (uint64_t)e->opt.ops > e->m.n_operations ? e->m.n_operations
                                                                             : (uint32_t)e->opt.ops;
    if (!plan_make(&e->m, n_ops, &e->plan)) fail(e, EXIT_DEVICE, "build", NEURON_OUT_OF_MEMORY, -1, "out of memory");
    NeuronModel *model;
    build_error be;
    if (!model_build(&e->api, &e->m, &e->plan, &model, &be)) {
        if (be.operand >= 0) {
            const mdla_operand *o = &e->m.operands[be.operand];
            fail(e, EXIT_DEVICE, "build", be.code, -1, "%s: %s for operand %ld `%.*s` (%s)", be.call,
                 neuron_result_name(be.code), be.operand, (int)o->name.n, o->name.s, mdla_type_name(o->type));
        }
        if (be.op >= 0) {
            const mdla_operation *op = &e->m.operations[be.op];
            fail(e, EXIT_DEVICE, "build", be.code, be.op, "%s: %s for operation %ld `%.*s` (%s)", be.call,
                 neuron_result_name(be.code), be.op, (int)op->name.n, op->name.s, neuron_op_name(op->code));
        }
        fail(e, EXIT_DEVICE, "build", be.code, -1, "%s: %s", be.call, neuron_result_name(be.code));
    }
    return model;
}

/* Per-op support on each selected device; returns how many ops device `d` supports. */
static uint32_t support(engine *e, NeuronModel *model, uint32_t d, bool *ok) {
    int rc = e->api.NeuronModel_getSupportedOperationsForDevices(model, &e->sel[d], 1, ok);
    if (rc) fail(e, EXIT_DEVICE, "supported", rc, -1, "NeuronModel_getSupportedOperationsForDevices on %s: %s",
                 e->sel_name[d], neuron_result_name(rc));
    uint32_t n = 0;
    for (uint32_t i = 0; i < e->plan.n_ops; i++) n += ok[i];
    return n;
}

void print_supported(engine *e, NeuronModel *model) {
    static const char *const names[] = {"NeuronModel_getSupportedOperationsForDevices", NULL};
    require(e, names);
    uint32_t n = e->plan.n_ops;
    bool *ok = calloc((size_t)(n ? n : 1) * e->n_sel, sizeof *ok);
    if (!ok) fail(e, EXIT_DEVICE, "supported", NEURON_OUT_OF_MEMORY, -1, "out of memory");
    uint32_t count[MAX_DEVICES];
    for (uint32_t d = 0; d < e->n_sel; d++) count[d] = support(e, model, d, ok + (size_t)d * n);
    if (e->opt.json) {
        printf("{\"ok\": true, ");
        json_devices(e);
        printf(", \"ops\": [");
        for (uint32_t i = 0; i < n; i++) {
            printf("%s{\"code\": \"%s\", \"name\": ", i ? ", " : "", neuron_op_name(e->m.operations[i].code));
            json_str(stdout, e->m.operations[i].name.s, e->m.operations[i].name.n);
            fputc('}', stdout);
        }
        printf("], \"supported\": {");
        for (uint32_t d = 0; d < e->n_sel; d++) {
            printf("%s", d ? ", " : "");
            json_cstr(stdout, e->sel_name[d]);
            printf(": [");
            for (uint32_t i = 0; i < n; i++) printf("%s%s", i ? ", " : "", ok[d * n + i] ? "true" : "false");
            printf("]");
        }
        puts("}}");
    } else {
        for (uint32_t d = 0; d < e->n_sel; d++) printf("%s: %u/%u operations supported\n", e->sel_name[d], count[d], n);
        for (uint32_t i = 0; i < n; i++) {
            printf("  %4u  %-20s", i, neuron_op_name(e->m.operations[i].code));
            for (uint32_t d = 0; d < e->n_sel; d++) printf("  %s:%s", e->sel_name[d], ok[d * n + i] ? "yes" : "NO");
            printf("  %.*s\n", (int)e->m.operations[i].name.n, e->m.operations[i].name.s);
        }
    }
    free(ok);
}

/* Whether the devices support every op of the first n operations (a fresh prefix model). */
static bool prefix_maps(engine *e, uint32_t n) {
    mdla_plan plan;
    NeuronModel *model = NULL;
    build_error be;
    bool ok = plan_make(&e->m, n, &plan) && model_build(&e->api, &e->m, &plan, &model, &be);
    bool *sup = ok ? calloc(n ? n : 1, sizeof *sup) : NULL;
    ok = sup && e->api.NeuronModel_getSupportedOperationsForDevices(model, e->sel, e->n_sel, sup) == NEURON_NO_ERROR;
    for (uint32_t i = 0; ok && i < n; i++) ok = sup[i];
    free(sup);
    if (model) e->api.NeuronModel_free(model);
    plan_free(&plan);
    return ok;
}

/* After a failed compilation: name the first unsupported op. When the support report is
 * all-or-nothing (the MDLA's), find it by bisecting op prefixes, as `--ops N` does by hand. */
static void explain_compile(engine *e, NeuronModel *model, int rc, const char *call) {
    long first = -1;
    uint32_t n = e->plan.n_ops, total = 0;
    bool *ok = calloc(n ? n : 1, sizeof *ok);
    if (ok && e->api.NeuronModel_getSupportedOperationsForDevices &&
        e->api.NeuronModel_getSupportedOperationsForDevices(model, e->sel, e->n_sel, ok) == NEURON_NO_ERROR) {
        for (uint32_t i = 0; i < n; i++) {
            total += ok[i];
            if (!ok[i] && first < 0) first = (long)i;
        }
        if (total == 0 && n > 1) { /* all-or-nothing: prefix lo maps, prefix hi does not */
            uint32_t lo = 0, hi = n;
            while (hi - lo > 1) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (prefix_maps(e, mid)) lo = mid;
                else hi = mid;
            }
            first = (long)lo;
        }
    }
    free(ok);
    int status = rc == NEURON_UNMAPPABLE ? EXIT_UNSUPPORTED : EXIT_DEVICE;
    if (first >= 0) {
        const mdla_operation *op = &e->m.operations[first];
        fail(e, status, "compile", rc, first,
             "%s on %s: %s; the device reports %u/%u operations supported; the first it cannot run "
             "is operation %ld `%.*s` (%s) (the first %ld map, the first %ld do not)",
             call, e->opt.device, neuron_result_name(rc), total, n, first, (int)op->name.n, op->name.s,
             neuron_op_name(op->code), first, first + 1);
    }
    fail(e, status, "compile", rc, -1, "%s on %s: %s; the device reports %u/%u operations supported",
         call, e->opt.device, neuron_result_name(rc), total, n);
}

NeuronCompilation *compile(engine *e, NeuronModel *model) {
    static const char *const names[] = {"NeuronCompilation_createForDevices", "NeuronCompilation_finish",
                                        "NeuronCompilation_free", NULL};
    require(e, names);
    NeuronCompilation *comp = NULL;
    int rc = e->api.NeuronCompilation_createForDevices(model, e->sel, e->n_sel, &comp);
    if (rc) explain_compile(e, model, rc, "NeuronCompilation_createForDevices");
    rc = finish_compilation(e, comp);
    if (rc) explain_compile(e, model, rc, "NeuronCompilation_finish");
    return comp;
}

/* --cache FILE: 64-byte prefix ("MDLACACHE", key, blob size), then the adapter's blob. The key
 * hashes the manifest bytes, --ops and --device, so a stale cache is rebuilt, never misused; a
 * partitioned manifest keeps one such file per NPU partition (engine_parts.c), keyed also by
 * the partition's index. */
#define CACHE_PREFIX 64
#define FNV_PRIME 1099511628211ull

static uint64_t manifest_hash(engine *e) {
    static uint64_t h;
    static bool done;
    if (!done) {
        h = 1469598103934665603ull;
        for (size_t i = 0; i < e->size; i++) h = (h ^ e->buf[i]) * FNV_PRIME;
        done = true;
    }
    return h;
}

uint64_t cache_key_for(engine *e, uint64_t salt, uint32_t n_ops, const char *device, size_t device_len) {
    uint64_t h = manifest_hash(e);
    if (salt) h = (h ^ salt) * FNV_PRIME;
    h = (h ^ n_ops) * FNV_PRIME;
    for (size_t i = 0; i < device_len; i++) h = (h ^ (uint8_t)device[i]) * FNV_PRIME;
    return h;
}

static uint64_t cache_key(engine *e) {
    return cache_key_for(e, 0, e->plan.n_ops, e->opt.device, strlen(e->opt.device));
}

static void put_u64(uint8_t *p, uint64_t v) { for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k)); }
static uint64_t get_u64(const uint8_t *p) { uint64_t v = 0; for (int k = 7; k >= 0; k--) v = (v << 8) | p[k]; return v; }

NeuronCompilation *cache_load(engine *e, const char *path, uint64_t key, uint8_t **blob, NeuronModel **model,
                              int *rc) {
    *rc = NEURON_NO_ERROR;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t pre[CACHE_PREFIX];
    NeuronCompilation *comp = NULL;
    if (fread(pre, 1, CACHE_PREFIX, f) == CACHE_PREFIX && memcmp(pre, "MDLACACHE", 9) == 0 &&
        get_u64(pre + 16) == key) {
        uint64_t size = get_u64(pre + 24);
        *blob = size && size < (1ull << 34) ? malloc((size_t)size) : NULL;
        if (*blob && fread(*blob, 1, (size_t)size, f) == size) {
            static const char *const names[] = {"NeuronModel_restoreFromCompiledNetwork", NULL};
            require(e, names);
            *rc = e->api.NeuronModel_restoreFromCompiledNetwork(model, &comp, *blob, (size_t)size);
            if (*rc) comp = NULL;
        }
    }
    fclose(f);
    return comp;
}

/* The restored compilation, or NULL (no cache file, a stale key, or a network the adapter
 * refuses). `*model` receives the model the adapter restored with it; the caller frees it after
 * the compilation. A refused network is compiled again with a note on stderr, as a partition's
 * is (engine_parts.c:restore_partition): the file is a cache, and a rebuild replaces it. */
NeuronCompilation *cache_restore(engine *e, uint8_t **blob, NeuronModel **model) {
    int rc;
    NeuronCompilation *comp = cache_load(e, e->opt.cache, cache_key(e), blob, model, &rc);
    if (rc) {
        *model = NULL;
        fprintf(stderr, "mdla-engine: note: cache %s: NeuronModel_restoreFromCompiledNetwork: %s; "
                        "compiling it again\n", e->opt.cache, neuron_result_name(rc));
    }
    if (comp) e->cache_state = "restored";
    else if (access(e->opt.cache, F_OK) == 0) e->cache_state = "stale";
    return comp;
}

void cache_save(engine *e, const char *path, uint64_t key, NeuronCompilation *comp) {
    static const char *const names[] = {"NeuronCompilation_getCompiledNetworkSize",
                                        "NeuronCompilation_storeCompiledNetwork", NULL};
    require(e, names);
    size_t size = 0;
    int rc = e->api.NeuronCompilation_getCompiledNetworkSize(comp, &size);
    uint8_t *blob = rc ? NULL : malloc(size ? size : 1);
    if (!rc && !blob) rc = NEURON_OUT_OF_MEMORY;
    if (!rc) rc = e->api.NeuronCompilation_storeCompiledNetwork(comp, blob, size);
    if (rc) fail(e, EXIT_DEVICE, "cache", rc, -1, "storing the compiled network: %s", neuron_result_name(rc));
    uint8_t pre[CACHE_PREFIX] = "MDLACACHE";
    put_u64(pre + 16, key);
    put_u64(pre + 24, size);
    /* a fresh name beside the cache, created exclusively (mkstemp: O_CREAT|O_EXCL, so a planted
     * file or symlink of any name is never opened), then renamed over it */
    char tmp[4200];
    mdla_fmt(tmp, sizeof tmp, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !f) close(fd);
    bool ok = f && fwrite(pre, 1, CACHE_PREFIX, f) == CACHE_PREFIX && fwrite(blob, 1, size, f) == size;
    int err = errno;
    if (f && fclose(f) != 0) ok = false, err = errno;
    free(blob);
    if (ok && rename(tmp, path) != 0) ok = false, err = errno;
    if (!ok) {
        if (fd >= 0) remove(tmp);
        fail(e, EXIT_BAD_INPUT, "cache", -1, -1, "cannot write %s: %s", path, strerror(err));
    }
}

void cache_store(engine *e, NeuronCompilation *comp) {
    cache_save(e, e->opt.cache, cache_key(e), comp);
    e->cache_state = e->cache_state ? "rebuilt" : "stored";
}

static uint8_t *read_input(engine *e, const char *path, uint64_t want, uint32_t k) {
    FILE *f = fopen(path, "rb");
    if (!f) fail(e, EXIT_BAD_INPUT, "input", -1, -1, "cannot open input %u %s: %s", k, path, strerror(errno));
    uint8_t *buf = malloc(want + 1);
    size_t got = buf ? fread(buf, 1, want + 1, f) : 0;
    fclose(f);
    if (!buf || got != want)
        fail(e, EXIT_BAD_INPUT, "input", -1, -1, "input %u %s: %zu bytes, the model wants %llu (int8, device layout)",
             k, path, got, (unsigned long long)want);
    return buf;
}

/* The bytes of operand `o` (model inputs and outputs are int8, validated by the reader; an
 * --ops cut may end on any tensor, so the element size is never assumed). */
static uint64_t bytes_of(engine *e, uint32_t o) {
    const mdla_operand *op = &e->m.operands[o];
    return op->elements * mdla_element_size(op->type);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void execute(engine *e, NeuronCompilation *comp) {
    static const char *const names[] = {"NeuronExecution_create", "NeuronExecution_free",
                                        "NeuronExecution_setInput", "NeuronExecution_setOutput",
                                        "NeuronExecution_compute", NULL};
    require(e, names);
    const mdla_plan *p = &e->plan;
    if (e->opt.n_inputs != (int)e->m.n_inputs)
        fail(e, EXIT_USAGE, "input", -1, -1, "the model has %u input(s), got %d --input file(s)", e->m.n_inputs, e->opt.n_inputs);
    uint8_t *in[MAX_FILES] = {0}, **out = calloc(p->n_outputs + 1, sizeof *out);
    for (uint32_t k = 0; k < p->n_inputs; k++)
        in[k] = read_input(e, e->opt.inputs[p->input_pos[k]], bytes_of(e, p->inputs[k]), p->input_pos[k]);
    for (uint32_t k = 0; out && k < p->n_outputs; k++) {
        out[k] = malloc(bytes_of(e, p->outputs[k]) + 1);
        if (!out[k]) fail(e, EXIT_DEVICE, "run", NEURON_OUT_OF_MEMORY, -1, "out of memory");
    }
    e->lat = calloc((size_t)e->opt.repeat, sizeof *e->lat);
    if (!out || !e->lat) fail(e, EXIT_DEVICE, "run", NEURON_OUT_OF_MEMORY, -1, "out of memory");
    for (long r = -e->opt.warmup; r < e->opt.repeat; r++) { /* r < 0: warm-up runs, not timed */
        NeuronExecution *ex = NULL;
        int rc = e->api.NeuronExecution_create(comp, &ex);
        for (uint32_t k = 0; !rc && k < p->n_inputs; k++)
            rc = e->api.NeuronExecution_setInput(ex, (int32_t)k, NULL, in[k], bytes_of(e, p->inputs[k]));
        for (uint32_t k = 0; !rc && k < p->n_outputs; k++)
            rc = e->api.NeuronExecution_setOutput(ex, (int32_t)k, NULL, out[k], bytes_of(e, p->outputs[k]));
        if (rc) fail(e, EXIT_DEVICE, "run", rc, -1, "preparing the execution: %s", neuron_result_name(rc));
        double t0 = now_ms();
        rc = e->api.NeuronExecution_compute(ex);
        if (r >= 0) e->lat[r] = now_ms() - t0;
        e->api.NeuronExecution_free(ex);
        if (rc) fail(e, rc == NEURON_UNMAPPABLE ? EXIT_UNSUPPORTED : EXIT_DEVICE, "run", rc, -1,
                     "NeuronExecution_compute: %s", neuron_result_name(rc));
        if (r >= 0) e->runs = r + 1;
    }
    for (uint32_t k = 0; e->opt.outdir && k < p->n_outputs; k++) {
        char path[4200];
        mdla_fmt(path, sizeof path, "%s/output_%u.bin", e->opt.outdir, k);
        FILE *f = fopen(path, "wb");
        size_t n = (size_t)bytes_of(e, p->outputs[k]);
        bool ok = f && fwrite(out[k], 1, n, f) == n;
        if (f && fclose(f) != 0) ok = false;
        if (!ok) fail(e, EXIT_BAD_INPUT, "output", -1, -1, "cannot write %s: %s", path, strerror(errno));
    }
    for (uint32_t k = 0; k < p->n_inputs; k++) free(in[k]);
    for (uint32_t k = 0; k < p->n_outputs; k++) free(out[k]);
    free(out);
    qsort(e->lat, (size_t)e->runs, sizeof *e->lat, cmp_double);
}

static double median(const engine *e) {
    long n = e->runs;
    return n % 2 ? e->lat[n / 2] : (e->lat[n / 2 - 1] + e->lat[n / 2]) / 2;
}

void print_run(engine *e) {
    const mdla_plan *p = &e->plan;
    if (!e->opt.json) {
        printf("%s on %s: %u/%u operations, %ld run(s), median %.3f ms, min %.3f ms, cache %s\n",
               e->opt.manifest, e->opt.device, p->n_ops, e->m.n_operations, e->runs, median(e), e->lat[0],
               e->cache_state ? e->cache_state : "off");
        for (uint32_t k = 0; k < p->n_outputs; k++) {
            const mdla_operand *o = &e->m.operands[p->outputs[k]];
            printf("  output %u: operand %u `%.*s`%s%s/output_%u.bin\n", k, p->outputs[k], (int)o->name.n,
                   o->name.s, e->opt.outdir ? " -> " : "", e->opt.outdir ? e->opt.outdir : "", k);
        }
        return;
    }
    printf("{\"ok\": true, ");
    json_devices(e);
    printf(", \"selected\": ");
    json_cstr(stdout, e->opt.device);
    printf(", \"ops\": %u, \"total_ops\": %u, \"cache\": ", p->n_ops, e->m.n_operations);
    if (e->cache_state) json_cstr(stdout, e->cache_state);
    else fputs("null", stdout);
    json_latency(e, median(e), e->lat);
    printf(", \"inputs\": [");
    for (uint32_t k = 0; k < p->n_inputs; k++) printf("%s%u", k ? ", " : "", p->input_pos[k]);
    printf("], \"outputs\": [");
    for (uint32_t k = 0; k < p->n_outputs; k++) json_output(e, k, p->outputs[k]);
    puts("]}");
}

