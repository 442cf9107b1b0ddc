/*
 * fuzz_engine.c: libFuzzer target for everything behind the manifest reader: the engine's
 * planning (plan_make, whole model and an op-prefix cut), model_build through the Neuron ABI of
 * the host emulator (linked in, not dlopen'ed), compilation, execution on deterministic inputs,
 * and the compiled-network blob (store, restore, run again); then, partition by partition, the
 * partition planner (plan_make_partition: an NPU partition as its own model, built, compiled
 * and run on the emulator as above) and the engine's cpu device (cpu/cpu_part.c: prepare, then
 * run on deterministic buffers for every operand the partition touches).
 *
 *   clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *         -I csrc -I $EMU -I $EMU/kernels -I $EMU/abi -I GENERATED -DMDLA_FUZZ_LIBFUZZER \
 *         fuzz_engine.c manifest*.c mdla_msgpack.c model.c cpu/cpu_part.c cpu/cpu_split.c \
 *         cpu/float_ops.c cpu/gru.c $EMU/kernels/*.c $EMU/abi/*.c emu_targets.c -lm -pthread -o fuzz_engine
 *                                                        (EMU: mdla_emu's csrc/)
 *
 * Without -fsanitize=fuzzer (no MDLA_FUZZ_LIBFUZZER) the same file builds a driver that runs
 * every file named on its command line once (the regression tests and the CI differential
 * test): exit 0 unless a sanitizer or an invariant aborts.
 *
 * Work per input is bounded so executions stay fast: a model whose operands hold more than
 * BUDGET_ELEMENTS elements in all, or whose convolutions and fully-connected layers need more
 * than BUDGET_MACS multiply-adds, is planned and built but not compiled or run. An input's
 * last byte picks the prefix cut, so the mutator reaches every cut of every model.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "cpu_part.h"
#include "manifest.h"
#include "model.h"

#define BUDGET_ELEMENTS (UINT64_C(1) << 18)
#define BUDGET_MACS (UINT64_C(1) << 22)
#define MAX_DEVS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* How far inputs get (printed at exit with MDLA_FUZZ_STATS set): parsed, built, executed. */
static unsigned long n_inputs, n_parsed, n_built, n_executed, n_cpu_ready, n_cpu_run;

static void print_stats(void) {
    fprintf(stderr, "fuzz_engine: %lu inputs, %lu parsed, %lu models built, %lu executed, "
            "%lu cpu partitions prepared, %lu run\n",
            n_inputs, n_parsed, n_built, n_executed, n_cpu_ready, n_cpu_run);
}

static neuron_api api_of_emulator(void) {
    neuron_api api;
    memset(&api, 0, sizeof api);
#define MDLA_LINK(name, ret, params) api.name = name;
    MDLA_NEURON_FUNCTIONS(MDLA_LINK)
#undef MDLA_LINK
    return api;
}

/* A plan's indices lie inside the manifest, and it lists no more than the manifest holds. */
static void check_plan(const mdla_manifest *m, const mdla_plan *p) {
    uint32_t used = 0;
    for (uint32_t o = 0; o < m->n_operands; o++) {
        if (p->map[o] == UINT32_MAX) continue;
        if (p->map[o] != used++) abort(); /* model operands are numbered densely, in order */
    }
    if (p->n_inputs > m->n_inputs) abort();
    for (uint32_t k = 0; k < p->n_inputs; k++)
        if (p->inputs[k] >= m->n_operands || p->input_pos[k] >= m->n_inputs) abort();
    if (p->n_outputs > m->n_operands + m->n_outputs) abort();
    for (uint32_t k = 0; k < p->n_outputs; k++)
        if (p->outputs[k] >= m->n_operands || p->map[p->outputs[k]] == UINT32_MAX) abort();
}

/* A partition's plan: dense numbering, its operations, and the partition's boundary operands
 * (inside the manifest, each one the model numbers) as the model's inputs and outputs. */
static void check_partition_plan(const mdla_manifest *m, const mdla_partition *pt,
                                 const mdla_plan *p) {
    uint32_t used = 0;
    for (uint32_t o = 0; o < m->n_operands; o++) {
        if (p->map[o] == UINT32_MAX) continue;
        if (p->map[o] != used++) abort();
    }
    if (p->n_ops != pt->n_operations || p->n_inputs != pt->n_inputs ||
        p->n_outputs != pt->n_outputs)
        abort();
    for (uint32_t k = 0; k < p->n_inputs; k++)
        if (p->inputs[k] >= m->n_operands || p->input_pos[k] != 0) abort();
    for (uint32_t k = 0; k < p->n_outputs; k++)
        if (p->outputs[k] >= m->n_operands || p->map[p->outputs[k]] == UINT32_MAX) abort();
}

/* Whether running the model stays inside the per-input budget. */
static bool within_budget(const mdla_manifest *m) {
    uint64_t elements = 0, macs = 0;
    for (uint32_t o = 0; o < m->n_operands; o++) {
        elements += m->operands[o].elements;
        if (elements > BUDGET_ELEMENTS) return false;
    }
    for (uint32_t i = 0; i < m->n_operations; i++) {
        const mdla_operation *op = &m->operations[i];
        if (op->n_inputs < 2 || op->n_outputs < 1) continue;
        /* every op does at most (output elements) x (elements of its second input) steps */
        const uint64_t out = m->operands[op->outputs[0]].elements;
        const uint64_t w = m->operands[op->inputs[1]].elements;
        macs += out * (w ? w : 1);
        if (macs > BUDGET_MACS) return false;
    }
    return true;
}

/* One execution of `comp` with inputs from a fixed pattern; the outputs' bytes are read. */
static void execute(const mdla_manifest *m, const mdla_plan *p, NeuronCompilation *comp) {
    NeuronExecution *ex = NULL;
    if (NeuronExecution_create(comp, &ex) != NEURON_NO_ERROR) return;
    n_executed++;
    uint8_t **bufs = calloc((size_t)p->n_inputs + p->n_outputs + 1, sizeof *bufs);
    int rc = bufs ? NEURON_NO_ERROR : NEURON_OUT_OF_MEMORY;
    for (uint32_t k = 0; rc == NEURON_NO_ERROR && k < p->n_inputs; k++) {
        const size_t n = (size_t)m->operands[p->inputs[k]].elements;
        bufs[k] = malloc(n ? n : 1);
        if (bufs[k] == NULL) { rc = NEURON_OUT_OF_MEMORY; break; }
        for (size_t i = 0; i < n; i++) bufs[k][i] = (uint8_t)(i * 37u + k * 11u);
        rc = NeuronExecution_setInput(ex, (int32_t)k, NULL, bufs[k], n);
    }
    for (uint32_t k = 0; rc == NEURON_NO_ERROR && k < p->n_outputs; k++) {
        const size_t n = (size_t)m->operands[p->outputs[k]].elements;
        uint8_t **b = &bufs[p->n_inputs + k];
        *b = malloc(n ? n : 1);
        if (*b == NULL) { rc = NEURON_OUT_OF_MEMORY; break; }
        rc = NeuronExecution_setOutput(ex, (int32_t)k, NULL, *b, n);
    }
    if (rc == NEURON_NO_ERROR && NeuronExecution_compute(ex) == NEURON_NO_ERROR) {
        volatile uint8_t sink = 0; /* every output byte was written (MSan would say; ASan reads) */
        for (uint32_t k = 0; k < p->n_outputs; k++)
            for (uint64_t i = 0; i < m->operands[p->outputs[k]].elements; i++)
                sink ^= bufs[p->n_inputs + k][i];
        (void)sink;
    }
    NeuronExecution_free(ex);
    for (uint32_t k = 0; bufs && k < p->n_inputs + p->n_outputs; k++) free(bufs[k]);
    free(bufs);
}

/* Store the compiled network, restore it, and run the restored compilation. */
static void round_trip(const mdla_manifest *m, const mdla_plan *p, NeuronCompilation *comp) {
    size_t size = 0;
    if (NeuronCompilation_getCompiledNetworkSize(comp, &size) != NEURON_NO_ERROR) return;
    uint8_t *blob = malloc(size ? size : 1);
    if (blob == NULL) return;
    if (NeuronCompilation_storeCompiledNetwork(comp, blob, size) == NEURON_NO_ERROR) {
        NeuronModel *model = NULL;
        NeuronCompilation *restored = NULL;
        if (NeuronModel_restoreFromCompiledNetwork(&model, &restored, blob, size) !=
            NEURON_NO_ERROR)
            abort(); /* a blob the emulator just wrote must restore */
        execute(m, p, restored);
        NeuronCompilation_free(restored);
        NeuronModel_free(model);
    }
    free(blob);
}

/* Build `plan` through the emulator's ABI; when `run`, compile it for every device, execute
 * it and (with `cache`) round-trip its compiled network. */
static void build_and_run(const mdla_manifest *m, const mdla_plan *plan, bool run, bool cache);

static void run_plan(const mdla_manifest *m, uint32_t n_ops, bool run, bool cache) {
    mdla_plan plan;
    if (!plan_make(m, n_ops, &plan)) return;
    check_plan(m, &plan);
    build_and_run(m, &plan, run, cache);
    plan_free(&plan);
}

static bool is_cpu(const mdla_partition *p) {
    return p->device.n == 3 && memcmp(p->device.s, MDLA_CPU_DEVICE, 3) == 0;
}

static size_t operand_bytes(const mdla_operand *o) {
    const size_t n = (size_t)o->elements * mdla_element_size(o->type);
    return n ? n : 1;
}

/* A cpu partition through the engine's cpu device: prepare; when `run`, one run with a buffer
 * (a fixed pattern, finite floats) for every non-constant operand its operations touch. */
static void run_cpu_partition(const mdla_manifest *m, const mdla_partition *pt, bool run) {
    mdla_cpu_part *cp = NULL;
    mdla_cpu_error err;
    if (!mdla_cpu_prepare(m, pt, &cp, &err)) {
        if (cp != NULL || !err.why[0]) abort(); /* a refusal says why and holds nothing */
        return;
    }
    n_cpu_ready++;
    void **data = run ? calloc(m->n_operands ? m->n_operands : 1, sizeof *data) : NULL;
    bool ok = data != NULL;
    for (uint32_t k = 0; ok && k < pt->n_operations; k++) {
        const mdla_operation *op = &m->operations[pt->operations[k]];
        for (uint32_t j = 0; ok && j < op->n_inputs + op->n_outputs; j++) {
            const uint32_t x = j < op->n_inputs ? op->inputs[j] : op->outputs[j - op->n_inputs];
            const mdla_operand *o = &m->operands[x];
            if (o->has_data || o->has_value || data[x]) continue;
            const size_t n = operand_bytes(o);
            uint8_t *b = data[x] = malloc(n);
            ok = b != NULL;
            for (size_t i = 0; ok && i < n; i++) b[i] = (uint8_t)(i * 37u + x * 11u) & 0x3f;
        }
    }
    if (ok) {
        mdla_cpu_run(cp, data);
        n_cpu_run++;
    }
    for (uint32_t x = 0; data && x < m->n_operands; x++) free(data[x]);
    free(data);
    mdla_cpu_free(cp);
}

/* Every partition in list order: a cpu one through the cpu device, an NPU one planned as its
 * own model (plan_make_partition) and built, compiled and run on the emulator. */
static void run_partitions(const mdla_manifest *m, bool run) {
    for (uint32_t k = 0; k < m->n_partitions; k++) {
        const mdla_partition *pt = &m->partitions[k];
        if (is_cpu(pt)) {
            run_cpu_partition(m, pt, run);
            continue;
        }
        mdla_plan plan;
        if (!plan_make_partition(m, pt, &plan)) continue;
        check_partition_plan(m, pt, &plan);
        build_and_run(m, &plan, run, false);
        plan_free(&plan);
    }
}

static void build_and_run(const mdla_manifest *m, const mdla_plan *plan, bool run, bool cache) {
    const neuron_api api = api_of_emulator();
    NeuronModel *model = NULL;
    build_error be;
    const bool built = model_build(&api, m, plan, &model, &be);
    n_built += built;
    if (built && run) {
        uint32_t n_dev = 0;
        const NeuronDevice *devs[MAX_DEVS];
        Neuron_getDeviceCount(&n_dev);
        if (n_dev > MAX_DEVS) n_dev = MAX_DEVS;
        for (uint32_t d = 0; d < n_dev; d++) {
            NeuronDevice *dev = NULL;
            Neuron_getDevice(d, &dev);
            devs[d] = dev;
        }
        NeuronCompilation *comp = NULL;
        if (NeuronCompilation_createForDevices(model, devs, n_dev, &comp) == NEURON_NO_ERROR) {
            NeuronCompilation_setPriority(comp, NEURON_PRIORITY_HIGH);
            const bool single = m->rounding.n == 6 && memcmp(m->rounding.s, "single", 6) == 0;
            MdlaEmu_setRounding(comp, single ? MDLA_EMU_ROUNDING_SINGLE : MDLA_EMU_ROUNDING_DOUBLE);
            if (NeuronCompilation_finish(comp) == NEURON_NO_ERROR) {
                execute(m, plan, comp);
                if (cache) round_trip(m, plan, comp);
            }
        }
        NeuronCompilation_free(comp);
    } else if (!built && be.code == NEURON_NO_ERROR) {
        abort(); /* a failed build names its Neuron error */
    }
    NeuronModel_free(model);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool first = true;
    if (first && getenv("MDLA_FUZZ_STATS")) atexit(print_stats);
    first = false;
    n_inputs++;
    uint8_t *buf = malloc(size ? size : 1); /* exactly sized: a read past the end is caught */
    if (buf == NULL) return 0;
    if (size) memcpy(buf, data, size);
    mdla_manifest m;
    mdla_error err;
    if (mdla_manifest_parse(buf, size, &m, &err)) {
        n_parsed++;
        const bool run = within_budget(&m);
        run_plan(&m, m.n_operations, run, true);
        if (m.n_operations > 1) {
            const uint32_t cut = size ? buf[size - 1] % m.n_operations : 0; /* in [0, n) */
            run_plan(&m, cut, run, false);
        }
        if (m.n_partitions > 1 || is_cpu(&m.partitions[0])) run_partitions(&m, run);
        mdla_manifest_free(&m);
    }
    free(buf);
    return 0;
}

#ifndef MDLA_FUZZ_LIBFUZZER
/* The driver: each argument is a file, run once; "-" reads the file names from stdin. */
static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "fuzz_engine: cannot open %s\n", path);
        return 2;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len == cap) {
            cap = cap ? 2 * cap : 65536;
            uint8_t *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                return 2;
            }
            buf = grown;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    int status = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-") != 0) {
            status |= run_file(argv[i]);
            continue;
        }
        char line[4096];
        while (fgets(line, sizeof line, stdin)) {
            line[strcspn(line, "\n")] = '\0';
            if (line[0]) status |= run_file(line);
        }
    }
    return status;
}
#endif
