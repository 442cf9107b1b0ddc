/*
 * engine.c: mdla-engine, which runs a .mdla manifest through a Neuron Adapter library.
 *
 *   mdla-engine MODEL.mdla --check                        validate, print the header
 *   mdla-engine --devices [--lib PATH]                    list the adapter's devices
 *   mdla-engine MODEL.mdla --supported [--device D,...]   per-op support on each device
 *   mdla-engine MODEL.mdla --input X.bin ... --outdir DIR [--repeat N] [--ops N] [--cache F]
 *
 * It compiles with NeuronCompilation_createForDevices on the named devices only (default
 * mtk-mdla; no fallback); a manifest of several partitions, or of a cpu one, runs partition by
 * partition (engine_parts.c: each NPU partition on its own device, cpu ones in-process), reports Neuron results by name with the operation when known, and
 * with --json prints one JSON object for mdla_runtime.target. See usage() for every option.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "mdla_ops.h"
#include "report.h"


static void usage(FILE *f) {
    fputs("usage: mdla-engine [MODEL.mdla] [options]\n"
          "  --check            validate the manifest and print its header (no adapter needed)\n"
          "  --devices          list the adapter's devices\n"
          "  --supported        per-operation support on each named device\n"
          "  --lib PATH         the Neuron Adapter library (default: the names phones ship)\n"
          "  --device D[,D...]  compile for these devices only (default mtk-mdla; no fallback)\n"
          "  --input FILE       raw int8 input in device layout, once per model input, in order\n"
          "  --outdir DIR       write output_<k>.bin (raw int8, device layout) here\n"
          "  --repeat N         run N times; report median and min latency (and all, in --json)\n"
          "  --warmup N         run N times first, untimed (default 0)\n"
          "  --threads N        threads of the cpu partitions and of the host emulator (1-64;\n"
          "                     sets MDLA_CPU_THREADS and MDLA_EMU_THREADS; default: theirs, or 1)\n"
          "  --ops N            build only the first N operations (outputs: tensors live at the cut)\n"
          "                     (a partitioned manifest: whole partitions, then the one N cuts\n"
          "                     as a model of its prefix; each on its own device, cpu ones here)\n"
          "  --cache FILE       store the compiled network on first run, restore it afterwards\n"
          "                     (a partitioned manifest: one FILE.p<k> per NPU partition k)\n"
          "  --max-tensor-mb N  refuse a manifest with a tensor over N MiB (default 256)\n"
          "  --max-total-mb N   refuse a manifest whose tensors sum over N MiB (default 1024)\n"
          "  --max-header-values N  refuse a header of more than N msgpack values (default 1048576)\n"
          "  --max-op-gops N    refuse an operation of over N billion multiply-adds or compares\n"
          "                     (from the shapes; default 16)\n"
          "  --max-total-gops N refuse a manifest whose operations sum over N billion (default 256)\n"
          "  --json             one JSON object on stdout\n"
          "exit: 0 ok, 1 bad manifest or input, 2 usage, 3 unsupported on the device, 4 adapter\n",
          f);
}


void fail(engine *e, int status, const char *stage, int result, long op, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const mdla_operation *o = (op >= 0 && (uint32_t)op < e->m.n_operations) ? &e->m.operations[op] : NULL;
    if (e->opt.json) {
        printf("{\"ok\": false, \"error\": {\"stage\": \"%s\", \"result\": ", stage);
        if (result >= 0) json_cstr(stdout, neuron_result_name(result));
        else fputs("null", stdout);
        printf(", \"op_index\": %ld, \"op_name\": ", op);
        if (o) json_str(stdout, o->name.s, o->name.n);
        else fputs("null", stdout);
        printf(", \"exit\": %d, \"message\": ", status);
        json_cstr(stdout, msg);
        fputs("}}\n", stdout);
    } else {
        fprintf(stderr, "mdla-engine: %s: %s\n", stage, msg);
    }
    exit(status);
}

static void fail_manifest(engine *e, const mdla_error *err) {
    if (e->opt.json) {
        printf("{\"ok\": false, \"error\": {\"stage\": \"manifest\", \"kind\": \"%s\", \"field\": ", err->kind);
        json_cstr(stdout, err->field);
        printf(", \"offset\": %llu, \"exit\": 1, \"message\": ", (unsigned long long)err->offset);
        json_cstr(stdout, err->why);
        fputs("}}\n", stdout);
    } else {
        fprintf(stderr, "mdla-engine: %s: %s: `%s` at byte %llu: %s\n", e->opt.manifest, err->kind,
                err->field, (unsigned long long)err->offset, err->why);
    }
    exit(EXIT_BAD_INPUT);
}

static long number(engine *e, const char *flag, const char *s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 1) fail(e, EXIT_USAGE, "usage", -1, -1, "%s wants a positive integer, got `%s`", flag, s);
    return v;
}

static uint64_t mebibytes(engine *e, const char *flag, const char *s) {
    long v = number(e, flag, s);
    if (v > (1L << 30)) fail(e, EXIT_USAGE, "usage", -1, -1, "%s: at most %ld MiB", flag, 1L << 30);
    return (uint64_t)v << 20;
}

static uint64_t billions(engine *e, const char *flag, const char *s) {
    long v = number(e, flag, s);
    if (v > (1L << 32)) fail(e, EXIT_USAGE, "usage", -1, -1, "%s: at most %ld", flag, 1L << 32);
    return (uint64_t)v * 1000000000ull;
}

static void parse_args(engine *e, int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->device = "mtk-mdla";
    o->repeat = 1;
    o->ops = -1;
    o->budget = MDLA_DEFAULT_BUDGET;
    for (int i = 1; i < argc; i++) o->json |= strcmp(argv[i], "--json") == 0; /* before any error */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) o->json = true;
        else if (!strcmp(a, "--check")) o->check = true;
        else if (!strcmp(a, "--devices")) o->devices = true;
        else if (!strcmp(a, "--supported")) o->supported = true;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); exit(0); }
        else if (a[0] == '-' && a[1] == '-' && !v) fail(e, EXIT_USAGE, "usage", -1, -1, "%s needs a value", a);
        else if (!strcmp(a, "--lib")) o->lib = argv[++i];
        else if (!strcmp(a, "--device")) o->device = argv[++i];
        else if (!strcmp(a, "--cache")) o->cache = argv[++i];
        else if (!strcmp(a, "--outdir")) o->outdir = argv[++i];
        else if (!strcmp(a, "--repeat")) o->repeat = number(e, a, argv[++i]);
        else if (!strcmp(a, "--warmup")) o->warmup = strcmp(argv[++i], "0") ? number(e, a, argv[i]) : 0;
        else if (!strcmp(a, "--ops")) o->ops = number(e, a, argv[++i]);
        else if (!strcmp(a, "--threads")) {
            o->threads = number(e, a, argv[++i]);
            if (o->threads > MAX_THREADS) fail(e, EXIT_USAGE, "usage", -1, -1, "%s: at most %d", a, MAX_THREADS);
        }
        else if (!strcmp(a, "--max-tensor-mb")) o->budget.max_tensor_bytes = mebibytes(e, a, argv[++i]);
        else if (!strcmp(a, "--max-total-mb")) o->budget.max_total_bytes = mebibytes(e, a, argv[++i]);
        else if (!strcmp(a, "--max-op-gops")) o->budget.max_op_ops = billions(e, a, argv[++i]);
        else if (!strcmp(a, "--max-total-gops")) o->budget.max_total_ops = billions(e, a, argv[++i]);
        else if (!strcmp(a, "--max-header-values")) {
            long v = number(e, a, argv[++i]);
            if (v > (long)UINT32_MAX - 1) fail(e, EXIT_USAGE, "usage", -1, -1, "%s: at most %u", a, UINT32_MAX - 1);
            o->budget.max_header_values = (uint32_t)v;
        }
        else if (!strcmp(a, "--input")) {
            if (o->n_inputs == MAX_FILES) fail(e, EXIT_USAGE, "usage", -1, -1, "more than %d inputs", MAX_FILES);
            o->inputs[o->n_inputs++] = argv[++i];
        } else if (a[0] == '-') fail(e, EXIT_USAGE, "usage", -1, -1, "unknown option %s (see --help)", a);
        else if (o->manifest) fail(e, EXIT_USAGE, "usage", -1, -1, "two manifests: %s and %s", o->manifest, a);
        else o->manifest = a;
    }
    if (!o->manifest && !o->devices) fail(e, EXIT_USAGE, "usage", -1, -1, "no manifest given (see --help)");
    if (o->threads) { /* read when a cpu partition, or the emulator's execution, is prepared */
        char n[24];
        snprintf(n, sizeof n, "%ld", o->threads);
        setenv("MDLA_CPU_THREADS", n, 1);
        setenv("MDLA_EMU_THREADS", n, 1);
    }
}

static void map_manifest(engine *e) {
    int fd = open(e->opt.manifest, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        fail(e, EXIT_BAD_INPUT, "manifest", -1, -1, "cannot open %s: %s", e->opt.manifest, strerror(errno));
    e->size = (size_t)st.st_size;
    static const uint8_t empty[1];
    e->buf = empty;
    if (e->size) {
        void *p = mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) fail(e, EXIT_BAD_INPUT, "manifest", -1, -1, "cannot map %s: %s", e->opt.manifest, strerror(errno));
        e->buf = p;
    }
    close(fd);
    mdla_error err;
    if (!mdla_manifest_parse_budget(e->buf, e->size, &e->opt.budget, &e->m, &err)) fail_manifest(e, &err);
}

/* A Neuron or host operation's name (host ones only ever sit in cpu partitions). */
static const char *op_name(int32_t code) {
    return code >= 0 && mdla_host_op((uint64_t)code) ? mdla_host_op_name((uint64_t)code)
                                                      : neuron_op_name(code);
}

static void print_check(engine *e) {
    const mdla_manifest *m = &e->m;
    if (!e->opt.json) {
        printf("%s: model `%.*s`, %u operands, %u operations, %u inputs, %u outputs, "
               "header %llu bytes, data %llu bytes\n",
               e->opt.manifest, (int)m->model_name.n, m->model_name.s, m->n_operands,
               m->n_operations, m->n_inputs, m->n_outputs, (unsigned long long)m->header_length,
               (unsigned long long)m->data_size);
        for (uint32_t i = 0; i < m->n_operations; i++)
            printf("  %4u  %-20s %2u in  %.*s\n", i, op_name(m->operations[i].code),
                   m->operations[i].n_inputs, (int)m->operations[i].name.n, m->operations[i].name.s);
        return;
    }
    printf("{\"ok\": true, \"manifest\": {\"name\": ");
    json_str(stdout, m->model_name.s, m->model_name.n);
    printf(", \"operands\": %u, \"operations\": %u, \"inputs\": %u, \"outputs\": %u, "
           "\"header_length\": %llu, \"data_size\": %llu}, \"ops\": [",
           m->n_operands, m->n_operations, m->n_inputs, m->n_outputs,
           (unsigned long long)m->header_length, (unsigned long long)m->data_size);
    for (uint32_t i = 0; i < m->n_operations; i++) {
        printf("%s{\"code\": \"%s\", \"name\": ", i ? ", " : "", op_name(m->operations[i].code));
        json_str(stdout, m->operations[i].name.s, m->operations[i].name.n);
        fputc('}', stdout);
    }
    printf("], \"partitions\": [");
    for (uint32_t p = 0; p < m->n_partitions; p++) {
        printf("%s{\"device\": ", p ? ", " : "");
        json_str(stdout, m->partitions[p].device.s, m->partitions[p].device.n);
        printf(", \"operations\": %u, \"inputs\": %u, \"outputs\": %u}",
               m->partitions[p].n_operations, m->partitions[p].n_inputs, m->partitions[p].n_outputs);
    }
    puts("]}");
}

void require(engine *e, const char *const *names) {
    char missing[2048];
    if (!adapter_require(&e->api, names, missing, sizeof missing))
        fail(e, EXIT_DEVICE, "adapter", -1, -1, "missing symbol(s) in %s: %s", e->api.path, missing);
}

void open_adapter(engine *e) {
    char msg[4096];
    if (!adapter_open(&e->api, e->opt.lib, msg, sizeof msg))
        fail(e, EXIT_DEVICE, "adapter", -1, -1, "cannot load a Neuron Adapter; tried:\n%s", msg);
    static const char *const basic[] = {"Neuron_getDeviceCount", "Neuron_getDevice",
                                        "NeuronDevice_getName", NULL};
    require(e, basic);
    if (e->api.Neuron_getVersion && e->api.Neuron_getVersion(&e->version) == NEURON_NO_ERROR)
        e->have_version = true;
    uint32_t n = 0;
    int rc = e->api.Neuron_getDeviceCount(&n);
    if (rc) fail(e, EXIT_DEVICE, "devices", rc, -1, "Neuron_getDeviceCount: %s", neuron_result_name(rc));
    e->n_dev = n > MAX_DEVICES ? MAX_DEVICES : n;
    for (uint32_t i = 0; i < e->n_dev; i++) {
        rc = e->api.Neuron_getDevice(i, &e->dev[i]);
        if (!rc) rc = e->api.NeuronDevice_getName(e->dev[i], &e->dev_name[i]);
        if (rc) fail(e, EXIT_DEVICE, "devices", rc, -1, "device %u: %s", i, neuron_result_name(rc));
        if (!e->dev_name[i]) e->dev_name[i] = "?";
    }
}

static void select_devices(engine *e) {
    char list[1024];
    mdla_fmt(list, sizeof list, "%s", e->opt.device);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint32_t k = 0;
        while (k < e->n_dev && strcmp(e->dev_name[k], tok) != 0) k++;
        if (k == e->n_dev) {
            char have[1024] = "";
            for (uint32_t i = 0; i < e->n_dev; i++)
                mdla_fmt(have + strlen(have), sizeof have - strlen(have), "%s%s", i ? ", " : "", e->dev_name[i]);
            fail(e, EXIT_DEVICE, "devices", NEURON_UNAVAILABLE_DEVICE, -1,
                 "no device named `%s` (the adapter has: %s)", tok, e->n_dev ? have : "none");
        }
        for (uint32_t s = 0; s < e->n_sel; s++)
            if (e->sel[s] == e->dev[k]) fail(e, EXIT_USAGE, "usage", -1, -1, "device `%s` named twice", tok);
        if (e->n_sel == MAX_DEVICES) fail(e, EXIT_USAGE, "usage", -1, -1, "too many devices");
        e->sel_name[e->n_sel] = e->dev_name[k];
        e->sel[e->n_sel++] = e->dev[k];
    }
    if (!e->n_sel) fail(e, EXIT_USAGE, "usage", -1, -1, "--device names no device");
}

void json_devices(engine *e) {
    printf("\"version\": ");
    if (e->have_version) printf("\"%u.%u.%u\"", e->version.major, e->version.minor, e->version.patch);
    else fputs("null", stdout);
    printf(", \"adapter\": ");
    json_cstr(stdout, e->api.path);
    printf(", \"devices\": [");
    for (uint32_t i = 0; i < e->n_dev; i++) {
        printf("%s", i ? ", " : "");
        json_cstr(stdout, e->dev_name[i]);
    }
    printf("]");
}

/* The manifest's rounding reaches the host emulator through its extension (numerics.h), found
 * with dlsym: a real adapter has none, and on a phone the silicon's own rounding applies. */
int finish_compilation(engine *e, NeuronCompilation *comp) {
    const bool single = e->m.rounding.n == 6 && memcmp(e->m.rounding.s, "single", 6) == 0;
    if (e->api.MdlaEmu_setRounding) {
        const int rc = e->api.MdlaEmu_setRounding(
            comp, single ? MDLA_EMU_ROUNDING_SINGLE : MDLA_EMU_ROUNDING_DOUBLE);
        if (rc != NEURON_NO_ERROR) return rc;
    }
    if (e->api.NeuronCompilation_setPriority) e->api.NeuronCompilation_setPriority(comp, NEURON_PRIORITY_HIGH);
    if (e->api.NeuronCompilation_setPreference)
        e->api.NeuronCompilation_setPreference(comp, NEURON_PREFER_FAST_SINGLE_ANSWER);
    return e->api.NeuronCompilation_finish(comp);
}

void json_latency(engine *e, double med, const double *sorted) {
    printf(", \"latency_ms\": {\"median\": %.6f, \"min\": %.6f, \"runs\": %ld, \"warmup\": %ld, \"sorted\": [",
           med, sorted[0], e->runs, e->opt.warmup);
    for (long r = 0; r < e->runs; r++) printf("%s%.6f", r ? ", " : "", sorted[r]);
    printf("]}");
}

void json_output(engine *e, uint32_t k, uint32_t operand) {
    const mdla_operand *o = &e->m.operands[operand];
    printf("%s{\"operand\": %u, \"name\": ", k ? ", " : "", operand);
    json_str(stdout, o->name.s, o->name.n);
    printf(", \"dims\": [");
    for (uint32_t d = 0; d < o->rank; d++) printf("%s%u", d ? ", " : "", o->dims[d]);
    printf("], \"scale\": %.9g, \"zero_point\": %d, \"file\": ", (double)o->scale, o->zero_point);
    if (e->opt.outdir) printf("\"output_%u.bin\"", k);
    else fputs("null", stdout);
    fputc('}', stdout);
}

int main(int argc, char **argv) {
    engine state = {0}; /* the whole run's state, passed by pointer */
    engine *e = &state;
    parse_args(e, argc, argv, &e->opt);
    if (e->opt.manifest) map_manifest(e);
    if (e->opt.check) { print_check(e); return 0; }
    if (e->opt.manifest && engine_partitioned(e)) { /* issue 17: engine_parts.c */
        engine_run_partitions(e);
        mdla_manifest_free(&e->m);
        return 0;
    }
    open_adapter(e);
    if (e->opt.devices && !e->opt.manifest) {
        if (e->opt.json) { printf("{\"ok\": true, "); json_devices(e); puts("}"); }
        else for (uint32_t i = 0; i < e->n_dev; i++) printf("%s\n", e->dev_name[i]);
        return 0;
    }
    select_devices(e);
    uint8_t *blob = NULL;
    NeuronModel *model = NULL;
    NeuronCompilation *comp = NULL;
    if (e->opt.supported) {
        model = build(e);
        print_supported(e, model);
        e->api.NeuronModel_free(model);
        return 0;
    }
    uint32_t n_ops = e->opt.ops < 0 || (uint64_t)e->opt.ops > e->m.n_operations ? e->m.n_operations : (uint32_t)e->opt.ops;
    if (e->opt.cache) {
        if (!plan_make(&e->m, n_ops, &e->plan)) fail(e, EXIT_DEVICE, "build", NEURON_OUT_OF_MEMORY, -1, "out of memory");
        comp = cache_restore(e, &blob, &model);
        if (!comp) plan_free(&e->plan);
    }
    if (!comp) {
        model = build(e);
        comp = compile(e, model);
        if (e->opt.cache) cache_store(e, comp);
    }
    execute(e, comp);
    print_run(e);
    e->api.NeuronCompilation_free(comp);
    if (model) e->api.NeuronModel_free(model);
    free(blob);
    free(e->lat);
    plan_free(&e->plan);
    mdla_manifest_free(&e->m);
    return 0;
}
