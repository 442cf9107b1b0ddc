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



bool engine_partitioned(engine *e) {
    const mdla_manifest *m = &e->m;
    if (m->n_partitions != 1) return true;
    const mdla_str *d = &m->partitions[0].device;
    return d->n == 3 && memcmp(d->s, MDLA_CPU_DEVICE, 3) == 0;
}

static bool is_cpu(const mdla_partition *p) {
    return p->device.n == 3 && memcmp(p->device.s, MDLA_CPU_DEVICE, 3) == 0;
}

static void *oom(engine *e, void *p) {
    if (!p) fail(e, EXIT_DEVICE, "run", NEURON_OUT_OF_MEMORY, -1, "out of memory");
    return p;
}

/* --ops N: operations 0..N-1 in the manifest's order (topological: the readers prove it).
 * Each partition keeps its operations below N, a prefix of its ascending list; the partition N
 * cuts in two becomes a model of that prefix reading the inputs it needs and writing what its
 * kept operations make that something still wants: its own outputs, a model output, or an
 * operation at or past the cut (its dropped rest included). Partitions left empty do not run;
 * the run's outputs are plan_make's, the tensors live at the cut, as for one model. */
static void cut_partitions(engine *e) { /* (parse_args refuses --ops 0) */
    const mdla_manifest *m = &e->m;
    e->n_run = m->n_operations;
    e->PT = m->partitions;
    if (e->opt.ops < 0 || (uint64_t)e->opt.ops >= m->n_operations) return;
    e->n_run = (uint32_t)e->opt.ops;
    if (!plan_make(m, e->n_run, &e->cut)) oom(e, NULL);
    e->cut_on = true;
    const uint32_t n = m->n_operands ? m->n_operands : 1;
    bool *later = oom(e, calloc(n, sizeof *later)), *read = oom(e, calloc(n, sizeof *read));
    bool *wrote = oom(e, calloc(n, sizeof *wrote));
    for (uint32_t i = e->n_run; i < m->n_operations; i++)
        for (uint32_t a = 0; a < m->operations[i].n_inputs; a++) later[m->operations[i].inputs[a]] = true;
    for (uint32_t k = 0; k < m->n_outputs; k++) later[m->outputs[k].operand] = true;
    e->PT = oom(e, calloc(m->n_partitions, sizeof *e->PT));
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        const mdla_partition *src = &m->partitions[k];
        mdla_partition *p = &e->PT[k];
        p->device = src->device;
        p->operations = src->operations; /* borrowed: a prefix of it runs */
        while (p->n_operations < src->n_operations && src->operations[p->n_operations] < e->n_run)
            p->n_operations++;
        p->inputs = oom(e, calloc(src->n_inputs + 1, sizeof *p->inputs));
        p->outputs = oom(e, calloc((size_t)m->n_operands + 1, sizeof *p->outputs));
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
static uint32_t n_run_outputs(engine *e) { return e->cut_on ? e->cut.n_outputs : e->m.n_outputs; }
static uint32_t run_output(engine *e, uint32_t k) { return e->cut_on ? e->cut.outputs[k] : e->m.outputs[k].operand; }

/* The adapter's device named by partition `k` (no fallback: another name is an error). */
static const NeuronDevice *device_of(engine *e, uint32_t k) {
    const mdla_str *name = &e->m.partitions[k].device;
    for (uint32_t i = 0; i < e->n_dev; i++)
        if (strlen(e->dev_name[i]) == name->n && memcmp(e->dev_name[i], name->s, name->n) == 0)
            return e->dev[i];
    char have[1024] = "";
    for (uint32_t i = 0; i < e->n_dev; i++)
        mdla_fmt(have + strlen(have), sizeof have - strlen(have), "%s%s", i ? ", " : "", e->dev_name[i]);
    fail(e, EXIT_DEVICE, "devices", NEURON_UNAVAILABLE_DEVICE, -1,
         "partition %u is placed on `%.*s`; the adapter has no such device (it has: %s)", k,
         (int)name->n, name->s, e->n_dev ? have : "none");
}

/* --device names the one device of an unpartitioned run; a partitioned manifest names its own
 * per partition, so only the default (or the same name) is accepted. */
static void check_device_option(engine *e) {
    for (uint32_t k = 0; k < e->m.n_partitions; k++) {
        const mdla_str *d = &e->m.partitions[k].device;
        if (is_cpu(&e->m.partitions[k])) continue;
        if (strlen(e->opt.device) != d->n || memcmp(e->opt.device, d->s, d->n) != 0)
            fail(e, EXIT_USAGE, "usage", -1, -1,
                 "--device %s: partition %u of %s is placed on `%.*s`, and a partitioned manifest "
                 "runs each partition on its own device",
                 e->opt.device, k, e->opt.manifest, (int)d->n, d->s);
    }
}

static void build_partition(engine *e, uint32_t k) {
    part *p = &e->P[k];
    build_error be;
    if (!model_build(&e->api, &e->m, &p->plan, &p->model, &be)) {
        if (be.op >= 0) {
            const mdla_operation *op = &e->m.operations[be.op];
            fail(e, EXIT_DEVICE, "build", be.code, be.op, "partition %u: %s: %s for operation %ld `%.*s` (%s)",
                 k, be.call, neuron_result_name(be.code), be.op, (int)op->name.n, op->name.s,
                 neuron_op_name(op->code));
        }
        fail(e, EXIT_DEVICE, "build", be.code, -1, "partition %u: %s: %s%s%ld", k, be.call,
             neuron_result_name(be.code), be.operand >= 0 ? " for operand " : "", be.operand);
    }
}

/* The first operation of NPU partition k the device reports unsupported, or -1. */
static long first_unsupported(engine *e, uint32_t k, uint32_t *n_ok) {
    part *p = &e->P[k];
    uint32_t n = p->plan.n_ops;
    bool *ok = oom(e, calloc(n ? n : 1, sizeof *ok));
    long first = -1;
    *n_ok = 0;
    if (e->api.NeuronModel_getSupportedOperationsForDevices &&
        e->api.NeuronModel_getSupportedOperationsForDevices(p->model, &p->dev, 1, ok) == NEURON_NO_ERROR)
        for (uint32_t i = 0; i < n; i++) {
            *n_ok += ok[i];
            if (!ok[i] && first < 0) first = (long)p->plan.ops[i];
        }
    free(ok);
    return first;
}

/* --cache: partition k's file, and its key (the manifest, k, and what of it runs: a partition
 * the --ops cut leaves whole keeps its key, the one it cuts has the cut's). */
static void cache_file(engine *e, uint32_t k, char *path, size_t size, uint64_t *key) {
    const mdla_partition *p = &e->PT[k];
    mdla_fmt(path, size, "%s.p%u", e->opt.cache, k);
    const bool cut_here = p->n_operations != e->m.partitions[k].n_operations;
    const uint64_t salt = ((uint64_t)(k + 1) << 32) | (cut_here ? e->n_run : 0);
    *key = cache_key_for(e, salt, p->n_operations, p->device.s, p->device.n);
}

/* --cache: partition k's compilation from its file; false when it must be compiled: no file
 * (stored), a stale key or short file (rebuilt), a network the adapter refuses (rebuilt, and a
 * note on stderr, as for one model: engine_run.c:cache_restore). */
static bool restore_partition(engine *e, uint32_t k) {
    if (!e->opt.cache) return false;
    char path[4200];
    uint64_t key;
    cache_file(e, k, path, sizeof path, &key);
    int rc;
    e->P[k].comp = cache_load(e, path, key, &e->P[k].blob, &e->P[k].model, &rc);
    if (e->P[k].comp) {
        e->P[k].cache = "restored";
        return true;
    }
    free(e->P[k].blob);
    e->P[k].blob = NULL;
    e->P[k].model = NULL;
    e->P[k].cache = access(path, F_OK) == 0 ? "rebuilt" : "stored";
    if (rc)
        fprintf(stderr, "mdla-engine: note: cache %s (partition %u): "
                        "NeuronModel_restoreFromCompiledNetwork: %s; compiling it again\n",
                path, k, neuron_result_name(rc));
    return false;
}

static void store_partition(engine *e, uint32_t k) {
    char path[4200];
    uint64_t key;
    cache_file(e, k, path, sizeof path, &key);
    cache_save(e, path, key, e->P[k].comp);
}

/* The run's cache state: restored when every NPU partition was, rebuilt when one was, else
 * stored; NULL without --cache or NPU partitions. */
static const char *cache_summary(engine *e) {
    const char *all = NULL;
    bool rebuilt = false, restored = true;
    for (uint32_t k = 0; e->opt.cache && k < e->m.n_partitions; k++) {
        if (e->P[k].cpu || e->P[k].skip) continue;
        all = "stored";
        rebuilt |= strcmp(e->P[k].cache, "rebuilt") == 0;
        restored &= strcmp(e->P[k].cache, "restored") == 0;
    }
    return !all ? NULL : restored ? "restored" : rebuilt ? "rebuilt" : all;
}

static void compile_partition(engine *e, uint32_t k) {
    part *p = &e->P[k];
    const mdla_str *d = &e->PT[k].device;
    int rc = e->api.NeuronCompilation_createForDevices(p->model, &p->dev, 1, &p->comp);
    const char *call = "NeuronCompilation_createForDevices";
    if (!rc) {
        rc = finish_compilation(e, p->comp);
        call = "NeuronCompilation_finish";
    }
    if (!rc) return;
    uint32_t n_ok;
    long first = first_unsupported(e, k, &n_ok);
    int status = rc == NEURON_UNMAPPABLE ? EXIT_UNSUPPORTED : EXIT_DEVICE;
    if (first >= 0) {
        const mdla_operation *op = &e->m.operations[first];
        fail(e, status, "compile", rc, first,
             "partition %u: %s on %.*s: %s; the device reports %u/%u of the partition's "
             "operations supported; the first it cannot run is operation %ld `%.*s` (%s)",
             k, call, (int)d->n, d->s, neuron_result_name(rc), n_ok, p->plan.n_ops, first,
             (int)op->name.n, op->name.s, neuron_op_name(op->code));
    }
    fail(e, status, "compile", rc, -1, "partition %u: %s on %.*s: %s", k, call, (int)d->n, d->s,
         neuron_result_name(rc));
}

static void prepare_cpu(engine *e, uint32_t k) {
    mdla_cpu_error err;
    if (!mdla_cpu_prepare(&e->m, &e->PT[k], &e->P[k].cp, &err)) {
        if (err.op >= 0) {
            const mdla_operation *op = &e->m.operations[err.op];
            fail(e, err.status, "cpu", -1, err.op, "partition %u (cpu): operation %ld `%.*s`: %s", k,
                 err.op, (int)op->name.n, op->name.s, err.why);
        }
        fail(e, err.status, "cpu", -1, -1, "partition %u (cpu): %s", k, err.why);
    }
}

static uint64_t bytes_of(engine *e, uint32_t o) {
    const mdla_operand *op = &e->m.operands[o];
    return op->elements * mdla_element_size(op->type);
}

/* One buffer per model input, boundary operand and cpu-partition activation. */
static void alloc_buffers(engine *e) {
    const mdla_manifest *m = &e->m;
    e->data = oom(e, calloc(m->n_operands ? m->n_operands : 1, sizeof *e->data));
    bool *need = oom(e, calloc(m->n_operands ? m->n_operands : 1, sizeof *need));
    for (uint32_t k = 0; k < m->n_inputs; k++) need[m->inputs[k].operand] = true;
    for (uint32_t k = 0; k < m->n_outputs; k++) need[m->outputs[k].operand] = true;
    for (uint32_t q = 0; q < m->n_partitions; q++) {
        const mdla_partition *p = &e->PT[q];
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
        if (need[o] && !op->has_data && !op->has_value) e->data[o] = oom(e, malloc(bytes_of(e, o) + 1));
    }
    free(need);
}

static void read_inputs(engine *e) {
    const mdla_manifest *m = &e->m;
    if (e->opt.n_inputs != (int)m->n_inputs)
        fail(e, EXIT_USAGE, "input", -1, -1, "the model has %u input(s), got %d --input file(s)", m->n_inputs, e->opt.n_inputs);
    for (uint32_t k = 0; k < m->n_inputs; k++) {
        const char *path = e->opt.inputs[k];
        uint64_t want = bytes_of(e, m->inputs[k].operand);
        FILE *f = fopen(path, "rb");
        if (!f) fail(e, EXIT_BAD_INPUT, "input", -1, -1, "cannot open input %u %s: %s", k, path, strerror(errno));
        uint8_t *buf = oom(e, malloc(want + 1));
        size_t got = fread(buf, 1, want + 1, f);
        fclose(f);
        if (got != want)
            fail(e, EXIT_BAD_INPUT, "input", -1, -1, "input %u %s: %zu bytes, the model wants %llu (int8, device layout)",
                 k, path, got, (unsigned long long)want);
        memcpy(e->data[m->inputs[k].operand], buf, want);
        free(buf);
    }
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void run_npu(engine *e, uint32_t k) {
    const mdla_plan *p = &e->P[k].plan;
    NeuronExecution *ex = NULL;
    int rc = e->api.NeuronExecution_create(e->P[k].comp, &ex);
    for (uint32_t i = 0; !rc && i < p->n_inputs; i++)
        rc = e->api.NeuronExecution_setInput(ex, (int32_t)i, NULL, e->data[p->inputs[i]], bytes_of(e, p->inputs[i]));
    for (uint32_t i = 0; !rc && i < p->n_outputs; i++)
        rc = e->api.NeuronExecution_setOutput(ex, (int32_t)i, NULL, e->data[p->outputs[i]], bytes_of(e, p->outputs[i]));
    if (!rc) rc = e->api.NeuronExecution_compute(ex);
    if (ex) e->api.NeuronExecution_free(ex);
    if (rc) fail(e, rc == NEURON_UNMAPPABLE ? EXIT_UNSUPPORTED : EXIT_DEVICE, "run", rc, -1,
                 "partition %u on %.*s: %s", k, (int)e->m.partitions[k].device.n,
                 e->m.partitions[k].device.s, neuron_result_name(rc));
}

static void write_outputs(engine *e) {
    for (uint32_t k = 0; e->opt.outdir && k < n_run_outputs(e); k++) {
        char path[4200];
        mdla_fmt(path, sizeof path, "%s/output_%u.bin", e->opt.outdir, k);
        FILE *f = fopen(path, "wb");
        uint32_t o = run_output(e, k);
        size_t n = (size_t)bytes_of(e, o);
        bool ok = f && fwrite(e->data[o], 1, n, f) == n;
        if (f && fclose(f) != 0) ok = false;
        if (!ok) fail(e, EXIT_BAD_INPUT, "output", -1, -1, "cannot write %s: %s", path, strerror(errno));
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

static void print_report(engine *e) {
    const mdla_manifest *m = &e->m;
    double *mins = oom(e, calloc(m->n_partitions + 1, sizeof *mins));
    double *meds = oom(e, calloc(m->n_partitions + 1, sizeof *meds));
    uint32_t n_parts = 0;
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        if (e->P[k].skip) continue;
        n_parts++;
        meds[k] = median(e->P[k].lat, e->runs);
        mins[k] = e->P[k].lat[0];
    }
    double med = median(e->total, e->runs);
    const char *cache = cache_summary(e);
    if (!e->opt.json) {
        printf("%s: %u partitions, %u/%u operations, %ld run(s), median %.3f ms, min %.3f ms%s%s\n",
               e->opt.manifest, n_parts, e->n_run, m->n_operations, e->runs, med, e->total[0],
               cache ? ", cache " : "", cache ? cache : "");
        for (uint32_t k = 0; k < m->n_partitions; k++) {
            const mdla_partition *p = &e->PT[k];
            if (e->P[k].skip) continue;
            printf("  partition %u on %.*s: %u operations, median %.3f ms, min %.3f ms", k,
                   (int)p->device.n, p->device.s, p->n_operations, meds[k], mins[k]);
            if (e->P[k].cache) printf(", cache %s", e->P[k].cache);
            putchar('\n');
        }
        for (uint32_t k = 0; k < n_run_outputs(e); k++) {
            const mdla_operand *o = &m->operands[run_output(e, k)];
            printf("  output %u: operand %u `%.*s`%s%s/output_%u.bin\n", k, run_output(e, k),
                   (int)o->name.n, o->name.s, e->opt.outdir ? " -> " : "", e->opt.outdir ? e->opt.outdir : "", k);
        }
    } else {
        printf("{\"ok\": true, ");
        json_devices(e);
        printf(", \"selected\": ");
        json_cstr(stdout, e->opt.device);
        printf(", \"ops\": %u, \"total_ops\": %u, \"cache\": ", e->n_run, m->n_operations);
        if (cache) json_cstr(stdout, cache);
        else fputs("null", stdout);
        json_latency(e, med, e->total);
        printf(", \"partitions\": [");
        for (uint32_t k = 0, first = 1; k < m->n_partitions; k++) {
            const mdla_partition *p = &e->PT[k];
            if (e->P[k].skip) continue;
            printf("%s{\"index\": %u, \"device\": ", first ? "" : ", ", k);
            first = 0;
            json_str(stdout, p->device.s, p->device.n);
            printf(", \"ops\": %u, \"first_op\": %u, \"ms\": %.6f, \"min_ms\": %.6f, \"cache\": ",
                   p->n_operations, p->operations[0], meds[k], mins[k]);
            if (e->P[k].cache) json_cstr(stdout, e->P[k].cache);
            else fputs("null", stdout);
            fputc('}', stdout);
        }
        printf("], \"inputs\": [");
        for (uint32_t k = 0; k < m->n_inputs; k++) printf("%s%u", k ? ", " : "", k);
        printf("], \"outputs\": [");
        for (uint32_t k = 0; k < n_run_outputs(e); k++) json_output(e, k, run_output(e, k));
        puts("]}");
    }
    free(mins);
    free(meds);
}

static void require_npu_calls(engine *e) {
    static const char *const names[] = {
        "NeuronModel_create", "NeuronModel_free", "NeuronModel_addOperand",
        "NeuronModel_setOperandValue", "NeuronModel_setOperandSymmPerChannelQuantParams",
        "NeuronModel_addOperation", "NeuronModel_identifyInputsAndOutputs", "NeuronModel_finish",
        "NeuronCompilation_createForDevices", "NeuronCompilation_finish", "NeuronCompilation_free",
        "NeuronExecution_create", "NeuronExecution_free", "NeuronExecution_setInput",
        "NeuronExecution_setOutput", "NeuronExecution_compute", NULL};
    require(e, names);
}

/* --supported of a partitioned manifest: per NPU partition, the device's report on that
 * partition's own model (cpu partitions are listed, not queried). */
static void print_supported_parts(engine *e) {
    static const char *const names[] = {"NeuronModel_getSupportedOperationsForDevices", NULL};
    const mdla_manifest *m = &e->m;
    for (uint32_t k = 0; k < m->n_partitions; k++)
        if (!e->P[k].cpu && !e->P[k].skip) { /* no NPU partition: no adapter was opened, nothing to ask */
            require(e, names);
            break;
        }
    if (e->opt.json) printf("{\"ok\": true, \"partitions\": [");
    for (uint32_t k = 0, first = 1; k < m->n_partitions; k++) {
        const mdla_partition *p = &e->PT[k];
        if (e->P[k].skip) continue;
        uint32_t n = p->n_operations, count = 0;
        bool *ok = oom(e, calloc(n ? n : 1, sizeof *ok));
        if (!e->P[k].cpu) {
            int rc = e->api.NeuronModel_getSupportedOperationsForDevices(e->P[k].model, &e->P[k].dev, 1, ok);
            if (rc) fail(e, EXIT_DEVICE, "supported", rc, -1, "partition %u: NeuronModel_getSupportedOperationsForDevices on %.*s: %s",
                         k, (int)p->device.n, p->device.s, neuron_result_name(rc));
            for (uint32_t i = 0; i < n; i++) count += ok[i];
        }
        if (e->opt.json) {
            printf("%s{\"device\": ", first ? "" : ", ");
            first = 0;
            json_str(stdout, p->device.s, p->device.n);
            printf(", \"ops\": [");
            for (uint32_t i = 0; i < n; i++) printf("%s%u", i ? ", " : "", p->operations[i]);
            printf("], \"supported\": ");
            if (e->P[k].cpu) fputs("null", stdout);
            else {
                fputc('[', stdout);
                for (uint32_t i = 0; i < n; i++) printf("%s%s", i ? ", " : "", ok[i] ? "true" : "false");
                fputc(']', stdout);
            }
            fputc('}', stdout);
        } else if (e->P[k].cpu) {
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
    if (e->opt.json) puts("]}");
}

void engine_run_partitions(engine *e) {
    const mdla_manifest *m = &e->m;
    check_device_option(e);
    cut_partitions(e);
    e->P = oom(e, calloc(m->n_partitions, sizeof *e->P));
    bool any_npu = false;
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        e->P[k].cpu = is_cpu(&m->partitions[k]);
        e->P[k].skip = e->PT[k].n_operations == 0;
        any_npu |= !e->P[k].cpu && !e->P[k].skip;
    }
    if (any_npu) { /* a run of cpu partitions alone needs no adapter */
        open_adapter(e);
        require_npu_calls(e);
    }
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        if (e->P[k].skip) continue;
        if (e->P[k].cpu) {
            if (!e->opt.supported) prepare_cpu(e, k);
            continue;
        }
        e->P[k].dev = device_of(e, k);
        if (!plan_make_partition(m, &e->PT[k], &e->P[k].plan))
            fail(e, EXIT_DEVICE, "build", NEURON_OUT_OF_MEMORY, -1, "out of memory");
        if (e->opt.supported || !restore_partition(e, k)) build_partition(e, k);
    }
    if (e->opt.supported) {
        print_supported_parts(e);
    } else {
        for (uint32_t k = 0; k < m->n_partitions; k++) {
            if (e->P[k].cpu || e->P[k].skip || e->P[k].comp) continue;
            compile_partition(e, k);
            if (e->opt.cache) store_partition(e, k);
        }
        alloc_buffers(e);
        read_inputs(e);
        e->total = oom(e, calloc((size_t)e->opt.repeat, sizeof *e->total));
        for (uint32_t k = 0; k < m->n_partitions; k++)
            e->P[k].lat = oom(e, calloc((size_t)e->opt.repeat, sizeof *e->P[k].lat));
        for (long r = -e->opt.warmup; r < e->opt.repeat; r++) { /* r < 0: warm-up runs, not timed */
            double t0 = now_ms();
            for (uint32_t k = 0; k < m->n_partitions; k++) {
                if (e->P[k].skip) continue;
                double t = now_ms();
                if (e->P[k].cpu) mdla_cpu_run(e->P[k].cp, e->data);
                else run_npu(e, k);
                if (r >= 0) e->P[k].lat[r] = now_ms() - t;
            }
            if (r >= 0) {
                e->total[r] = now_ms() - t0;
                e->runs = r + 1;
            }
        }
        write_outputs(e);
        print_report(e);
    }
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        if (e->P[k].comp) e->api.NeuronCompilation_free(e->P[k].comp);
        if (e->P[k].model) e->api.NeuronModel_free(e->P[k].model);
        mdla_cpu_free(e->P[k].cp);
        plan_free(&e->P[k].plan);
        free(e->P[k].lat);
        free(e->P[k].blob);
        if (e->cut_on) {
            free(e->PT[k].inputs);
            free(e->PT[k].outputs);
        }
    }
    if (e->cut_on) {
        free(e->PT);
        plan_free(&e->cut);
    }
    for (uint32_t o = 0; e->data && o < m->n_operands; o++) free(e->data[o]);
    free(e->data);
    free(e->total);
    free(e->P);
}
