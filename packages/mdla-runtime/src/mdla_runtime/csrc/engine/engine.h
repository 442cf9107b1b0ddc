/*
 * engine.h: what engine.c (options, adapter, devices, output) and engine_run.c (build,
 * compile, cache, execute) share: the engine state and the failure reporting.
 */
#ifndef MDLA_ENGINE_H
#define MDLA_ENGINE_H

#include "adapter.h"
#include "manifest.h"
#include "model.h"

#define MAX_FILES 64
#define MAX_DEVICES 16

typedef struct {
    const char *manifest, *lib, *device, *cache, *outdir;
    const char *inputs[MAX_FILES];
    int n_inputs;
    long repeat, warmup, ops;
    bool json, check, devices, supported;
    mdla_budget budget; /* --max-tensor-mb, --max-total-mb, --max-header-values, --max-*-gops */
} options;

typedef struct {
    options opt;
    neuron_api api;
    const uint8_t *buf;
    size_t size;
    mdla_manifest m;
    mdla_plan plan;
    uint32_t n_dev, n_sel;
    NeuronDevice *dev[MAX_DEVICES];
    const char *dev_name[MAX_DEVICES];
    const NeuronDevice *sel[MAX_DEVICES];
    const char *sel_name[MAX_DEVICES];
    NeuronRuntimeVersion version;
    bool have_version;
    const char *cache_state;
    double *lat;
    long runs;
} engine;

extern engine E;

/* Report a failure (text or JSON) and exit with `status`; result/op are -1 when unknown. */
void fail(int status, const char *stage, int result, long op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6), noreturn))
#endif
    ;
void require(const char *const *names);
void json_devices(void);
/* Set the engine's compilation preferences (high priority, a fast single answer; each when the
 * adapter has the call) and finish `comp`: the Neuron result of NeuronCompilation_finish. */
int finish_compilation(NeuronCompilation *comp);
/* `, "latency_ms": {...}` over the E.runs timings `sorted` (ascending) and their median. */
void json_latency(double med, const double *sorted);
/* Output `k` (operand index `operand` of E.m) as one element of a JSON "outputs" array. */
void json_output(uint32_t k, uint32_t operand);

NeuronModel *build(void);
void print_supported(NeuronModel *model);
NeuronCompilation *compile(NeuronModel *model);
NeuronCompilation *cache_restore(uint8_t **blob, NeuronModel **model);
void cache_store(NeuronCompilation *comp);
/* The cache file's key: the manifest's bytes, then `salt` (0 for an unpartitioned run, else
 * 1 + the partition index), the cut's operation count and the device name. */
uint64_t cache_key_for(uint64_t salt, uint32_t n_ops, const char *device, size_t device_len);
/* The compilation stored in `path` under `key`, or NULL: no file, another key or a short blob
 * (*rc 0), or a blob the adapter refuses (*rc its Neuron result). */
NeuronCompilation *cache_load(const char *path, uint64_t key, uint8_t **blob, NeuronModel **model,
                              int *rc);
/* Store `comp`'s compiled network in `path` under `key` (written whole, then renamed). */
void cache_save(const char *path, uint64_t key, NeuronCompilation *comp);
void execute(NeuronCompilation *comp);
void print_run(void);
void open_adapter(void);

/* engine_parts.c: whether the manifest is partitioned (several partitions, or a cpu one), and
 * running it partition by partition (--supported, or a run with its report). */
bool engine_partitioned(void);
void engine_run_partitions(void);

#endif /* MDLA_ENGINE_H */
