/*
 * engine_parts.c: mdla-engine's partition runner (issue 17, docs/partitions.md section 4).
 *
 * A format-3 manifest of several partitions, or of a cpu one, runs partition by partition in
 * list order (the readers proved that order topological):
 *   - an NPU partition is its own Neuron model (plan_make_partition: its operations; its
 *     boundary operands are the model's inputs and outputs), compiled with
 *     NeuronCompilation_createForDevices on the partition's device alone (no fallback) and
 *     executed through the Neuron ABI as a whole model is;
 *   - a cpu partition runs in-process (cpu/cpu_part.c: the emulator's int8 kernels and the
 *     float kernels of cpu/float_ops.c).
 * Every model input, boundary operand and cpu-partition tensor has one int8 buffer; an NPU
 * partition reads and writes its boundary buffers directly.
 *
 * --ops N runs the operations 0..N-1 across partitions (cut_partitions: the partition N cuts
 * runs its prefix, later ones do not run; the outputs are the tensors live at the cut, as for
 * one model). --cache FILE keeps one compiled network per NPU partition, in FILE.p<k>.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_part.h"
#include "engine.h"
#include "mdla_ops.h"
#include "report.h"

typedef struct {
    bool cpu;
    const NeuronDevice *dev;
    mdla_plan plan;          /* NPU partitions */
    NeuronModel *model;      /* NPU partitions */
    NeuronCompilation *comp; /* NPU partitions */
    mdla_cpu_part *cp;       /* cpu partitions */
    double *lat;             /* per timed run, ms */
    bool skip;               /* --ops N: no operation of the partition is below N */
    uint8_t *blob;           /* --cache: the restored network's bytes */
    const char *cache;       /* --cache: stored, restored or rebuilt */
} part;

static part *P;
static mdla_partition *PT; /* the partitions run: the manifest's, or cut by --ops */
static bool cut_on;        /* --ops N below the operation count: PT is owned, `cut` is made */
static mdla_plan cut;      /* --ops N: its outputs are the tensors live at the cut */
static uint32_t n_run;     /* the operations run: N, or all */
static void **data;   /* per manifest operand: its buffer, NULL when none is needed */
static double *total; /* per timed run, ms */

bool engine_partitioned(void) {
    const mdla_manifest *m = &E.m;
    if (m->n_partitions != 1) return true;
    const mdla_str *d = &m->partitions[0].device;
    return d->n == 3 && memcmp(d->s, MDLA_CPU_DEVICE, 3) == 0;
}

static bool is_cpu(const mdla_partition *p) {
    return p->device.n == 3 && memcmp(p->device.s, MDLA_CPU_DEVICE, 3) == 0;
}

static void *oom(void *p) {
    if (!p) fail(EXIT_DEVICE, "run", NEURON_OUT_OF_MEMORY, -1, "out of memory");
    return p;
}

/* --ops N: operations 0..N-1 in the manifest's order (topological: the readers prove it).
 * Each partition keeps its operations below N, a prefix of its ascending list; the partition N
 * cuts in two becomes a model of that prefix reading the inputs it needs and writing what its
 * kept operations make that something still wants: its own outputs, a model output, or an
 * operation at or past the cut (its dropped rest included). Partitions left empty do not run;
 * the run's outputs are plan_make's, the tensors live at the cut, as for one model. */
static void cut_partitions(void) { /* (parse_args refuses --ops 0) */
    const mdla_manifest *m = &E.m;
    n_run = m->n_operations;
    PT = m->partitions;
    if (E.opt.ops < 0 || (uint64_t)E.opt.ops >= m->n_operations) return;
    n_run = (uint32_t)E.opt.ops;
    if (!plan_make(m, n_run, &cut)) oom(NULL);
    cut_on = true;
    const uint32_t n = m->n_operands ? m->n_operands : 1;
    bool *later = oom(calloc(n, sizeof *later)), *read = oom(calloc(n, sizeof *read));
    bool *wrote = oom(calloc(n, sizeof *wrote));
    for (uint32_t i = n_run; i < m->n_operations; i++)
        for (uint32_t a = 0; a < m->operations[i].n_inputs; a++) later[m->operations[i].inputs[a]] = true;
    for (uint32_t k = 0; k < m->n_outputs; k++) later[m->outputs[k].operand] = true;
    PT = oom(calloc(m->n_partitions, sizeof *PT));
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        const mdla_partition *src = &m->partitions[k];
        mdla_partition *p = &PT[k];
        p->device = src->device;
        p->operations = src->operations; /* borrowed: a prefix of it runs */
        while (p->n_operations < src->n_operations && src->operations[p->n_operations] < n_run)
            p->n_operations++;
        p->inputs = oom(calloc(src->n_inputs + 1, sizeof *p->inputs));
        p->outputs = oom(calloc((size_t)m->n_operands + 1, sizeof *p->outputs));
        if (p->n_operations == 0) continue;
        if (p->n_operations == src->n_operations) {
            p->n_inputs = src->n_inputs;
            p->n_outputs = src->n_outputs;
            memcpy(p->inputs, src->inputs, src->n_inputs * sizeof *p->inputs);
            memcpy(p->outputs, src->outputs, src->n_outputs * sizeof *p->outputs);
            continue;
        }
        memset(read, 0, n * sizeof *read);
        memset(wrote, 0, n * sizeof *wrote);
        for (uint32_t i = 0; i < p->n_operations; i++) {
            const mdla_operation *op = &m->operations[p->operations[i]];
            for (uint32_t a = 0; a < op->n_inputs; a++) read[op->inputs[a]] = true;
            for (uint32_t a = 0; a < op->n_outputs; a++) wrote[op->outputs[a]] = true;
        }
        for (uint32_t i = 0; i < src->n_inputs; i++)
            if (read[src->inputs[i]]) p->inputs[p->n_inputs++] = src->inputs[i];
        for (uint32_t i = 0; i < src->n_outputs; i++) later[src->outputs[i]] = true;
        for (uint32_t o = 0; o < m->n_operands; o++)
            if (wrote[o] && later[o]) p->outputs[p->n_outputs++] = o;
    }
    free(later);
    free(read);
    free(wrote);
}

/* The outputs of this run: the manifest's, or those live at the --ops cut. */
static uint32_t n_run_outputs(void) { return cut_on ? cut.n_outputs : E.m.n_outputs; }
static uint32_t run_output(uint32_t k) { return cut_on ? cut.outputs[k] : E.m.outputs[k].operand; }

/* The adapter's device named by partition `k` (no fallback: another name is an error). */
static const NeuronDevice *device_of(uint32_t k) {
    const mdla_str *name = &E.m.partitions[k].device;
    for (uint32_t i = 0; i < E.n_dev; i++)
        if (strlen(E.dev_name[i]) == name->n && memcmp(E.dev_name[i], name->s, name->n) == 0)
            return E.dev[i];
    char have[1024] = "";
    for (uint32_t i = 0; i < E.n_dev; i++)
        mdla_fmt(have + strlen(have), sizeof have - strlen(have), "%s%s", i ? ", " : "", E.dev_name[i]);
    fail(EXIT_DEVICE, "devices", NEURON_UNAVAILABLE_DEVICE, -1,
         "partition %u is placed on `%.*s`; the adapter has no such device (it has: %s)", k,
         (int)name->n, name->s, E.n_dev ? have : "none");
}

/* --device names the one device of an unpartitioned run; a partitioned manifest names its own
 * per partition, so only the default (or the same name) is accepted. */
static void check_device_option(void) {
    for (uint32_t k = 0; k < E.m.n_partitions; k++) {
        const mdla_str *d = &E.m.partitions[k].device;
        if (is_cpu(&E.m.partitions[k])) continue;
        if (strlen(E.opt.device) != d->n || memcmp(E.opt.device, d->s, d->n) != 0)
            fail(EXIT_USAGE, "usage", -1, -1,
                 "--device %s: partition %u of %s is placed on `%.*s`, and a partitioned manifest "
                 "runs each partition on its own device",
                 E.opt.device, k, E.opt.manifest, (int)d->n, d->s);
    }
}

static void build_partition(uint32_t k) {
    part *p = &P[k];
    build_error be;
    if (!model_build(&E.api, &E.m, &p->plan, &p->model, &be)) {
        if (be.op >= 0) {
            const mdla_operation *op = &E.m.operations[be.op];
            fail(EXIT_DEVICE, "build", be.code, be.op, "partition %u: %s: %s for operation %ld `%.*s` (%s)",
                 k, be.call, neuron_result_name(be.code), be.op, (int)op->name.n, op->name.s,
                 neuron_op_name(op->code));
        }
        fail(EXIT_DEVICE, "build", be.code, -1, "partition %u: %s: %s%s%ld", k, be.call,
             neuron_result_name(be.code), be.operand >= 0 ? " for operand " : "", be.operand);
    }
}

/* The first operation of NPU partition k the device reports unsupported, or -1. */
static long first_unsupported(uint32_t k, uint32_t *n_ok) {
    part *p = &P[k];
    uint32_t n = p->plan.n_ops;
    bool *ok = oom(calloc(n ? n : 1, sizeof *ok));
    long first = -1;
    *n_ok = 0;
    if (E.api.NeuronModel_getSupportedOperationsForDevices &&
        E.api.NeuronModel_getSupportedOperationsForDevices(p->model, &p->dev, 1, ok) == NEURON_NO_ERROR)
        for (uint32_t i = 0; i < n; i++) {
            *n_ok += ok[i];
            if (!ok[i] && first < 0) first = (long)p->plan.ops[i];
        }
    free(ok);
    return first;
}

/* --cache: partition k's file, and its key (the manifest, k, and what of it runs: a partition
 * the --ops cut leaves whole keeps its key, the one it cuts has the cut's). */
static void cache_file(uint32_t k, char *path, size_t size, uint64_t *key) {
    const mdla_partition *p = &PT[k];
    mdla_fmt(path, size, "%s.p%u", E.opt.cache, k);
    const bool cut_here = p->n_operations != E.m.partitions[k].n_operations;
    const uint64_t salt = ((uint64_t)(k + 1) << 32) | (cut_here ? n_run : 0);
    *key = cache_key_for(salt, p->n_operations, p->device.s, p->device.n);
}

/* --cache: partition k's compilation from its file; false when it must be compiled: no file
 * (stored), a stale key or short file (rebuilt), a network the adapter refuses (rebuilt, and a
 * note on stderr, as for one model: engine_run.c:cache_restore). */
static bool restore_partition(uint32_t k) {
    if (!E.opt.cache) return false;
    char path[4200];
    uint64_t key;
    cache_file(k, path, sizeof path, &key);
    int rc;
    P[k].comp = cache_load(path, key, &P[k].blob, &P[k].model, &rc);
    if (P[k].comp) {
        P[k].cache = "restored";
        return true;
    }
    free(P[k].blob);
    P[k].blob = NULL;
    P[k].model = NULL;
    P[k].cache = access(path, F_OK) == 0 ? "rebuilt" : "stored";
    if (rc)
        fprintf(stderr, "mdla-engine: note: cache %s (partition %u): "
                        "NeuronModel_restoreFromCompiledNetwork: %s; compiling it again\n",
                path, k, neuron_result_name(rc));
    return false;
}

static void store_partition(uint32_t k) {
    char path[4200];
    uint64_t key;
    cache_file(k, path, sizeof path, &key);
    cache_save(path, key, P[k].comp);
}

/* The run's cache state: restored when every NPU partition was, rebuilt when one was, else
 * stored; NULL without --cache or NPU partitions. */
static const char *cache_summary(void) {
    const char *all = NULL;
    bool rebuilt = false, restored = true;
    for (uint32_t k = 0; E.opt.cache && k < E.m.n_partitions; k++) {
        if (P[k].cpu || P[k].skip) continue;
        all = "stored";
        rebuilt |= strcmp(P[k].cache, "rebuilt") == 0;
        restored &= strcmp(P[k].cache, "restored") == 0;
    }
    return !all ? NULL : restored ? "restored" : rebuilt ? "rebuilt" : all;
}

static void compile_partition(uint32_t k) {
    part *p = &P[k];
    const mdla_str *d = &PT[k].device;
    int rc = E.api.NeuronCompilation_createForDevices(p->model, &p->dev, 1, &p->comp);
    const char *call = "NeuronCompilation_createForDevices";
    if (!rc) {
        rc = finish_compilation(p->comp);
        call = "NeuronCompilation_finish";
    }
    if (!rc) return;
    uint32_t n_ok;
    long first = first_unsupported(k, &n_ok);
    int status = rc == NEURON_UNMAPPABLE ? EXIT_UNSUPPORTED : EXIT_DEVICE;
    if (first >= 0) {
        const mdla_operation *op = &E.m.operations[first];
        fail(status, "compile", rc, first,
             "partition %u: %s on %.*s: %s; the device reports %u/%u of the partition's "
             "operations supported; the first it cannot run is operation %ld `%.*s` (%s)",
             k, call, (int)d->n, d->s, neuron_result_name(rc), n_ok, p->plan.n_ops, first,
             (int)op->name.n, op->name.s, neuron_op_name(op->code));
    }
    fail(status, "compile", rc, -1, "partition %u: %s on %.*s: %s", k, call, (int)d->n, d->s,
         neuron_result_name(rc));
}

static void prepare_cpu(uint32_t k) {
    mdla_cpu_error err;
    if (!mdla_cpu_prepare(&E.m, &PT[k], &P[k].cp, &err)) {
        if (err.op >= 0) {
            const mdla_operation *op = &E.m.operations[err.op];
            fail(err.status, "cpu", -1, err.op, "partition %u (cpu): operation %ld `%.*s`: %s", k,
                 err.op, (int)op->name.n, op->name.s, err.why);
        }
        fail(err.status, "cpu", -1, -1, "partition %u (cpu): %s", k, err.why);
    }
}

static uint64_t bytes_of(uint32_t o) {
    const mdla_operand *op = &E.m.operands[o];
    return op->elements * mdla_element_size(op->type);
}

/* One buffer per model input, boundary operand and cpu-partition activation. */
static void alloc_buffers(void) {
    const mdla_manifest *m = &E.m;
    data = oom(calloc(m->n_operands ? m->n_operands : 1, sizeof *data));
    bool *need = oom(calloc(m->n_operands ? m->n_operands : 1, sizeof *need));
    for (uint32_t k = 0; k < m->n_inputs; k++) need[m->inputs[k].operand] = true;
    for (uint32_t k = 0; k < m->n_outputs; k++) need[m->outputs[k].operand] = true;
    for (uint32_t q = 0; q < m->n_partitions; q++) {
        const mdla_partition *p = &PT[q];
        for (uint32_t i = 0; i < p->n_inputs; i++) need[p->inputs[i]] = true;
        for (uint32_t i = 0; i < p->n_outputs; i++) need[p->outputs[i]] = true;
        for (uint32_t i = 0; is_cpu(p) && i < p->n_operations; i++) {
            const mdla_operation *op = &m->operations[p->operations[i]];
            for (uint32_t a = 0; a < op->n_inputs; a++) need[op->inputs[a]] = true;
            for (uint32_t a = 0; a < op->n_outputs; a++) need[op->outputs[a]] = true;
        }
    }
    for (uint32_t o = 0; o < m->n_operands; o++) {
        const mdla_operand *op = &m->operands[o];
        if (need[o] && !op->has_data && !op->has_value) data[o] = oom(malloc(bytes_of(o) + 1));
    }
    free(need);
}

static void read_inputs(void) {
    const mdla_manifest *m = &E.m;
    if (E.opt.n_inputs != (int)m->n_inputs)
        fail(EXIT_USAGE, "input", -1, -1, "the model has %u input(s), got %d --input file(s)", m->n_inputs, E.opt.n_inputs);
    for (uint32_t k = 0; k < m->n_inputs; k++) {
        const char *path = E.opt.inputs[k];
        uint64_t want = bytes_of(m->inputs[k].operand);
        FILE *f = fopen(path, "rb");
        if (!f) fail(EXIT_BAD_INPUT, "input", -1, -1, "cannot open input %u %s: %s", k, path, strerror(errno));
        uint8_t *buf = oom(malloc(want + 1));
        size_t got = fread(buf, 1, want + 1, f);
        fclose(f);
        if (got != want)
            fail(EXIT_BAD_INPUT, "input", -1, -1, "input %u %s: %zu bytes, the model wants %llu (int8, device layout)",
                 k, path, got, (unsigned long long)want);
        memcpy(data[m->inputs[k].operand], buf, want);
        free(buf);
    }
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void run_npu(uint32_t k) {
    const mdla_plan *p = &P[k].plan;
    NeuronExecution *ex = NULL;
    int rc = E.api.NeuronExecution_create(P[k].comp, &ex);
    for (uint32_t i = 0; !rc && i < p->n_inputs; i++)
        rc = E.api.NeuronExecution_setInput(ex, (int32_t)i, NULL, data[p->inputs[i]], bytes_of(p->inputs[i]));
    for (uint32_t i = 0; !rc && i < p->n_outputs; i++)
        rc = E.api.NeuronExecution_setOutput(ex, (int32_t)i, NULL, data[p->outputs[i]], bytes_of(p->outputs[i]));
    if (!rc) rc = E.api.NeuronExecution_compute(ex);
    if (ex) E.api.NeuronExecution_free(ex);
    if (rc) fail(rc == NEURON_UNMAPPABLE ? EXIT_UNSUPPORTED : EXIT_DEVICE, "run", rc, -1,
                 "partition %u on %.*s: %s", k, (int)E.m.partitions[k].device.n,
                 E.m.partitions[k].device.s, neuron_result_name(rc));
}

static void write_outputs(void) {
    for (uint32_t k = 0; E.opt.outdir && k < n_run_outputs(); k++) {
        char path[4200];
        mdla_fmt(path, sizeof path, "%s/output_%u.bin", E.opt.outdir, k);
        FILE *f = fopen(path, "wb");
        uint32_t o = run_output(k);
        size_t n = (size_t)bytes_of(o);
        bool ok = f && fwrite(data[o], 1, n, f) == n;
        if (f && fclose(f) != 0) ok = false;
        if (!ok) fail(EXIT_BAD_INPUT, "output", -1, -1, "cannot write %s: %s", path, strerror(errno));
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_report(void) {
    const mdla_manifest *m = &E.m;
    double *mins = oom(calloc(m->n_partitions + 1, sizeof *mins));
    double *meds = oom(calloc(m->n_partitions + 1, sizeof *meds));
    uint32_t n_parts = 0;
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        if (P[k].skip) continue;
        n_parts++;
        meds[k] = median(P[k].lat, E.runs);
        mins[k] = P[k].lat[0];
    }
    double med = median(total, E.runs);
    const char *cache = cache_summary();
    if (!E.opt.json) {
        printf("%s: %u partitions, %u/%u operations, %ld run(s), median %.3f ms, min %.3f ms%s%s\n",
               E.opt.manifest, n_parts, n_run, m->n_operations, E.runs, med, total[0],
               cache ? ", cache " : "", cache ? cache : "");
        for (uint32_t k = 0; k < m->n_partitions; k++) {
            const mdla_partition *p = &PT[k];
            if (P[k].skip) continue;
            printf("  partition %u on %.*s: %u operations, median %.3f ms, min %.3f ms", k,
                   (int)p->device.n, p->device.s, p->n_operations, meds[k], mins[k]);
            if (P[k].cache) printf(", cache %s", P[k].cache);
            putchar('\n');
        }
        for (uint32_t k = 0; k < n_run_outputs(); k++) {
            const mdla_operand *o = &m->operands[run_output(k)];
            printf("  output %u: operand %u `%.*s`%s%s/output_%u.bin\n", k, run_output(k),
                   (int)o->name.n, o->name.s, E.opt.outdir ? " -> " : "", E.opt.outdir ? E.opt.outdir : "", k);
        }
    } else {
        printf("{\"ok\": true, ");
        json_devices();
        printf(", \"selected\": ");
        json_cstr(stdout, E.opt.device);
        printf(", \"ops\": %u, \"total_ops\": %u, \"cache\": ", n_run, m->n_operations);
        if (cache) json_cstr(stdout, cache);
        else fputs("null", stdout);
        json_latency(med, total);
        printf(", \"partitions\": [");
        for (uint32_t k = 0, first = 1; k < m->n_partitions; k++) {
            const mdla_partition *p = &PT[k];
            if (P[k].skip) continue;
            printf("%s{\"index\": %u, \"device\": ", first ? "" : ", ", k);
            first = 0;
            json_str(stdout, p->device.s, p->device.n);
            printf(", \"ops\": %u, \"first_op\": %u, \"ms\": %.6f, \"min_ms\": %.6f, \"cache\": ",
                   p->n_operations, p->operations[0], meds[k], mins[k]);
            if (P[k].cache) json_cstr(stdout, P[k].cache);
            else fputs("null", stdout);
            fputc('}', stdout);
        }
        printf("], \"inputs\": [");
        for (uint32_t k = 0; k < m->n_inputs; k++) printf("%s%u", k ? ", " : "", k);
        printf("], \"outputs\": [");
        for (uint32_t k = 0; k < n_run_outputs(); k++) json_output(k, run_output(k));
        puts("]}");
    }
    free(mins);
    free(meds);
}

static void require_npu_calls(void) {
    static const char *const names[] = {
        "NeuronModel_create", "NeuronModel_free", "NeuronModel_addOperand",
        "NeuronModel_setOperandValue", "NeuronModel_setOperandSymmPerChannelQuantParams",
        "NeuronModel_addOperation", "NeuronModel_identifyInputsAndOutputs", "NeuronModel_finish",
        "NeuronCompilation_createForDevices", "NeuronCompilation_finish", "NeuronCompilation_free",
        "NeuronExecution_create", "NeuronExecution_free", "NeuronExecution_setInput",
        "NeuronExecution_setOutput", "NeuronExecution_compute", NULL};
    require(names);
}

/* --supported of a partitioned manifest: per NPU partition, the device's report on that
 * partition's own model (cpu partitions are listed, not queried). */
static void print_supported_parts(void) {
    static const char *const names[] = {"NeuronModel_getSupportedOperationsForDevices", NULL};
    const mdla_manifest *m = &E.m;
    for (uint32_t k = 0; k < m->n_partitions; k++)
        if (!P[k].cpu && !P[k].skip) { /* no NPU partition: no adapter was opened, nothing to ask */
            require(names);
            break;
        }
    if (E.opt.json) printf("{\"ok\": true, \"partitions\": [");
    for (uint32_t k = 0, first = 1; k < m->n_partitions; k++) {
        const mdla_partition *p = &PT[k];
        if (P[k].skip) continue;
        uint32_t n = p->n_operations, count = 0;
        bool *ok = oom(calloc(n ? n : 1, sizeof *ok));
        if (!P[k].cpu) {
            int rc = E.api.NeuronModel_getSupportedOperationsForDevices(P[k].model, &P[k].dev, 1, ok);
            if (rc) fail(EXIT_DEVICE, "supported", rc, -1, "partition %u: NeuronModel_getSupportedOperationsForDevices on %.*s: %s",
                         k, (int)p->device.n, p->device.s, neuron_result_name(rc));
            for (uint32_t i = 0; i < n; i++) count += ok[i];
        }
        if (E.opt.json) {
            printf("%s{\"device\": ", first ? "" : ", ");
            first = 0;
            json_str(stdout, p->device.s, p->device.n);
            printf(", \"ops\": [");
            for (uint32_t i = 0; i < n; i++) printf("%s%u", i ? ", " : "", p->operations[i]);
            printf("], \"supported\": ");
            if (P[k].cpu) fputs("null", stdout);
            else {
                fputc('[', stdout);
                for (uint32_t i = 0; i < n; i++) printf("%s%s", i ? ", " : "", ok[i] ? "true" : "false");
                fputc(']', stdout);
            }
            fputc('}', stdout);
        } else if (P[k].cpu) {
            printf("partition %u on cpu: %u operations (the engine's own kernels)\n", k, n);
        } else {
            printf("partition %u on %.*s: %u/%u operations supported\n", k, (int)p->device.n,
                   p->device.s, count, n);
            for (uint32_t i = 0; i < n; i++) {
                const mdla_operation *op = &m->operations[p->operations[i]];
                printf("  %4u  %-20s  %s  %.*s\n", p->operations[i], neuron_op_name(op->code),
                       ok[i] ? "yes" : "NO", (int)op->name.n, op->name.s);
            }
        }
        free(ok);
    }
    if (E.opt.json) puts("]}");
}

void engine_run_partitions(void) {
    const mdla_manifest *m = &E.m;
    check_device_option();
    cut_partitions();
    P = oom(calloc(m->n_partitions, sizeof *P));
    bool any_npu = false;
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        P[k].cpu = is_cpu(&m->partitions[k]);
        P[k].skip = PT[k].n_operations == 0;
        any_npu |= !P[k].cpu && !P[k].skip;
    }
    if (any_npu) { /* a run of cpu partitions alone needs no adapter */
        open_adapter();
        require_npu_calls();
    }
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        if (P[k].skip) continue;
        if (P[k].cpu) {
            if (!E.opt.supported) prepare_cpu(k);
            continue;
        }
        P[k].dev = device_of(k);
        if (!plan_make_partition(m, &PT[k], &P[k].plan))
            fail(EXIT_DEVICE, "build", NEURON_OUT_OF_MEMORY, -1, "out of memory");
        if (E.opt.supported || !restore_partition(k)) build_partition(k);
    }
    if (E.opt.supported) {
        print_supported_parts();
    } else {
        for (uint32_t k = 0; k < m->n_partitions; k++) {
            if (P[k].cpu || P[k].skip || P[k].comp) continue;
            compile_partition(k);
            if (E.opt.cache) store_partition(k);
        }
        alloc_buffers();
        read_inputs();
        total = oom(calloc((size_t)E.opt.repeat, sizeof *total));
        for (uint32_t k = 0; k < m->n_partitions; k++)
            P[k].lat = oom(calloc((size_t)E.opt.repeat, sizeof *P[k].lat));
        for (long r = -E.opt.warmup; r < E.opt.repeat; r++) { /* r < 0: warm-up runs, not timed */
            double t0 = now_ms();
            for (uint32_t k = 0; k < m->n_partitions; k++) {
                if (P[k].skip) continue;
                double t = now_ms();
                if (P[k].cpu) mdla_cpu_run(P[k].cp, data);
                else run_npu(k);
                if (r >= 0) P[k].lat[r] = now_ms() - t;
            }
            if (r >= 0) {
                total[r] = now_ms() - t0;
                E.runs = r + 1;
            }
        }
        write_outputs();
        print_report();
    }
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        if (P[k].comp) E.api.NeuronCompilation_free(P[k].comp);
        if (P[k].model) E.api.NeuronModel_free(P[k].model);
        mdla_cpu_free(P[k].cp);
        plan_free(&P[k].plan);
        free(P[k].lat);
        free(P[k].blob);
        if (cut_on) {
            free(PT[k].inputs);
            free(PT[k].outputs);
        }
    }
    if (cut_on) {
        free(PT);
        plan_free(&cut);
    }
    for (uint32_t o = 0; data && o < m->n_operands; o++) free(data[o]);
    free(data);
    free(total);
    free(P);
}
