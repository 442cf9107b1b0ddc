/*
 * engine.h: what engine.c (options, adapter, devices, output), engine_run.c (build, compile,
 * cache, execute) and engine_parts.c (partitioned runs) share: the engine state, one struct that
 * main owns and passes by pointer (no global), and the failure reporting.
 */
#ifndef MDLA_ENGINE_H
#define MDLA_ENGINE_H

#include "adapter.h"
#include "manifest.h"
#include "model.h"
#include "cpu_part.h"

#define MAX_FILES 64
#define MAX_THREADS 64 /* --threads: mdla-emu's EMU_MAX_THREADS (kernels/pool.c) */
#define MAX_DEVICES 16

typedef struct {
    const char *manifest, *lib, *device, *cache, *outdir;
    const char *inputs[MAX_FILES];
    int n_inputs;
    long repeat, warmup, ops, threads; /* threads: --threads, 0 when not given */
    bool json, check, devices, supported;
    mdla_budget budget; /* --max-tensor-mb, --max-total-mb, --max-header-values, --max-*-gops */
} options;

/* One partition of a partitioned run (engine_parts.c). */
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

typedef struct engine {
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
    /* a partitioned run (engine_parts.c) */
    part *P;
    mdla_partition *PT; /* the partitions run: the manifest's, or cut by --ops */
    bool cut_on;        /* --ops N below the operation count: PT is owned, `cut` is made */
    mdla_plan cut;      /* --ops N: its outputs are the tensors live at the cut */
    uint32_t n_run;     /* the operations run: N, or all */
    void **data;        /* per manifest operand: its buffer, NULL when none is needed */
    double *total;      /* per timed run, ms */
} engine;


/* Report a failure (text or JSON) and exit with `status`; result/op are -1 when unknown. */
void fail(engine *e, int status, const char *stage, int result, long op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7), noreturn))
#endif
    ;
void require(engine *e, const char *const *names);
void json_devices(engine *e);
/* Set the engine's compilation preferences (high priority, a fast single answer; each when the
 * adapter has the call) and finish `comp`: the Neuron result of NeuronCompilation_finish. */
int finish_compilation(engine *e, NeuronCompilation *comp);
/* `, "latency_ms": {...}` over the engine's `runs` timings `sorted` (ascending) and their median. */
void json_latency(engine *e, double med, const double *sorted);
/* Output `k` (operand index `operand` of the manifest) as one element of a JSON "outputs" array. */
void json_output(engine *e, uint32_t k, uint32_t operand);

NeuronModel *build(engine *e);
void print_supported(engine *e, NeuronModel *model);
NeuronCompilation *compile(engine *e, NeuronModel *model);
NeuronCompilation *cache_restore(engine *e, uint8_t **blob, NeuronModel **model);
void cache_store(engine *e, NeuronCompilation *comp);
/* The cache file's key: the manifest's bytes, then `salt` (0 for an unpartitioned run, else
 * 1 + the partition index), the cut's operation count and the device name. */
uint64_t cache_key_for(engine *e, uint64_t salt, uint32_t n_ops, const char *device, size_t device_len);
/* The compilation stored in `path` under `key`, or NULL: no file, another key or a short blob
 * (*rc 0), or a blob the adapter refuses (*rc its Neuron result). */
NeuronCompilation *cache_load(engine *e, const char *path, uint64_t key, uint8_t **blob, NeuronModel **model,
                              int *rc);
/* Store `comp`'s compiled network in `path` under `key` (written whole, then renamed). */
void cache_save(engine *e, const char *path, uint64_t key, NeuronCompilation *comp);
void execute(engine *e, NeuronCompilation *comp);
void print_run(engine *e);
void open_adapter(engine *e);

/* engine_parts.c: whether the manifest is partitioned (several partitions, or a cpu one), and
 * running it partition by partition (--supported, or a run with its report). */
bool engine_partitioned(engine *e);
void engine_run_partitions(engine *e);

#endif /* MDLA_ENGINE_H */
