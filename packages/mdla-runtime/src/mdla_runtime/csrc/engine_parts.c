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
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
} part;

static part *P;
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
    if (!plan_make_partition(&E.m, &E.m.partitions[k], &p->plan))
        fail(EXIT_DEVICE, "build", NEURON_OUT_OF_MEMORY, -1, "out of memory");
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

static void compile_partition(uint32_t k) {
    part *p = &P[k];
    const mdla_str *d = &E.m.partitions[k].device;
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
    if (!mdla_cpu_prepare(&E.m, &E.m.partitions[k], &P[k].cp, &err)) {
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
        const mdla_partition *p = &m->partitions[q];
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
    for (uint32_t k = 0; E.opt.outdir && k < E.m.n_outputs; k++) {
        char path[4200];
        mdla_fmt(path, sizeof path, "%s/output_%u.bin", E.opt.outdir, k);
        FILE *f = fopen(path, "wb");
        uint32_t o = E.m.outputs[k].operand;
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
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        meds[k] = median(P[k].lat, E.runs);
        mins[k] = P[k].lat[0];
    }
    double med = median(total, E.runs);
    if (!E.opt.json) {
        printf("%s: %u partitions, %u/%u operations, %ld run(s), median %.3f ms, min %.3f ms\n",
               E.opt.manifest, m->n_partitions, m->n_operations, m->n_operations, E.runs, med, total[0]);
        for (uint32_t k = 0; k < m->n_partitions; k++) {
            const mdla_partition *p = &m->partitions[k];
            printf("  partition %u on %.*s: %u operations, median %.3f ms, min %.3f ms\n", k,
                   (int)p->device.n, p->device.s, p->n_operations, meds[k], mins[k]);
        }
        for (uint32_t k = 0; k < m->n_outputs; k++) {
            const mdla_operand *o = &m->operands[m->outputs[k].operand];
            printf("  output %u: operand %u `%.*s`%s%s/output_%u.bin\n", k, m->outputs[k].operand,
                   (int)o->name.n, o->name.s, E.opt.outdir ? " -> " : "", E.opt.outdir ? E.opt.outdir : "", k);
        }
    } else {
        printf("{\"ok\": true, ");
        json_devices();
        printf(", \"selected\": ");
        json_cstr(stdout, E.opt.device);
        printf(", \"ops\": %u, \"total_ops\": %u, \"cache\": null", m->n_operations, m->n_operations);
        json_latency(med, total);
        printf(", \"partitions\": [");
        for (uint32_t k = 0; k < m->n_partitions; k++) {
            const mdla_partition *p = &m->partitions[k];
            printf("%s{\"device\": ", k ? ", " : "");
            json_str(stdout, p->device.s, p->device.n);
            printf(", \"ops\": %u, \"first_op\": %u, \"ms\": %.6f, \"min_ms\": %.6f}", p->n_operations,
                   p->n_operations ? p->operations[0] : 0, meds[k], mins[k]);
        }
        printf("], \"inputs\": [");
        for (uint32_t k = 0; k < m->n_inputs; k++) printf("%s%u", k ? ", " : "", k);
        printf("], \"outputs\": [");
        for (uint32_t k = 0; k < m->n_outputs; k++) json_output(k, m->outputs[k].operand);
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
        if (!P[k].cpu) { /* no NPU partition: no adapter was opened, nothing to ask */
            require(names);
            break;
        }
    if (E.opt.json) printf("{\"ok\": true, \"partitions\": [");
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        const mdla_partition *p = &m->partitions[k];
        uint32_t n = p->n_operations, count = 0;
        bool *ok = oom(calloc(n ? n : 1, sizeof *ok));
        if (!P[k].cpu) {
            int rc = E.api.NeuronModel_getSupportedOperationsForDevices(P[k].model, &P[k].dev, 1, ok);
            if (rc) fail(EXIT_DEVICE, "supported", rc, -1, "partition %u: NeuronModel_getSupportedOperationsForDevices on %.*s: %s",
                         k, (int)p->device.n, p->device.s, neuron_result_name(rc));
            for (uint32_t i = 0; i < n; i++) count += ok[i];
        }
        if (E.opt.json) {
            printf("%s{\"device\": ", k ? ", " : "");
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
    if (E.opt.ops >= 0)
        fail(EXIT_USAGE, "usage", -1, -1, "--ops on a partitioned manifest (%u partitions) is not "
             "built yet: bisect one NPU partition (docs/partitions.md section 4)", m->n_partitions);
    if (E.opt.cache)
        fail(EXIT_USAGE, "usage", -1, -1, "--cache on a partitioned manifest (%u partitions) is not "
             "built yet (one compiled network per NPU partition)", m->n_partitions);
    check_device_option();
    P = oom(calloc(m->n_partitions, sizeof *P));
    bool any_npu = false;
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        P[k].cpu = is_cpu(&m->partitions[k]);
        any_npu |= !P[k].cpu;
    }
    if (any_npu) { /* a manifest of cpu partitions alone needs no adapter */
        open_adapter();
        require_npu_calls();
    }
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        if (P[k].cpu) {
            if (!E.opt.supported) prepare_cpu(k);
            continue;
        }
        P[k].dev = device_of(k);
        build_partition(k);
    }
    if (E.opt.supported) {
        print_supported_parts();
    } else {
        for (uint32_t k = 0; k < m->n_partitions; k++)
            if (!P[k].cpu) compile_partition(k);
        alloc_buffers();
        read_inputs();
        total = oom(calloc((size_t)E.opt.repeat, sizeof *total));
        for (uint32_t k = 0; k < m->n_partitions; k++)
            P[k].lat = oom(calloc((size_t)E.opt.repeat, sizeof *P[k].lat));
        for (long r = -E.opt.warmup; r < E.opt.repeat; r++) { /* r < 0: warm-up runs, not timed */
            double t0 = now_ms();
            for (uint32_t k = 0; k < m->n_partitions; k++) {
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
    }
    for (uint32_t o = 0; data && o < m->n_operands; o++) free(data[o]);
    free(data);
    free(total);
    free(P);
}
