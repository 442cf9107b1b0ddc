/* compilation.h: the compilation record that compilation.c and execution.c share. */
#ifndef MDLA_EMU_COMPILATION_H
#define MDLA_EMU_COMPILATION_H

#include "emu.h"

struct NeuronCompilation {
    NeuronModel *source; /* the caller's finished model (it outlives the compilation) */
    NeuronModel *model;  /* the snapshot taken at finish: owns every value */
    const EmuTargetDevice *devs[EMU_MAX_DEVICES];
    uint32_t dev_index[EMU_MAX_DEVICES];
    uint32_t n_devs; /* 0 until finish for the adapter-chosen kinds (create, createWithOptions) */
    bool apu; /* one of the devices sits in the APU power domain (mtk-mdla, mtk-dsp) */
    int32_t preference, priority;
    bool finished;
    int32_t rounding; /* MdlaEmu_setRounding's (numerics.h), else double */
    EmuNumerics num;  /* the arithmetic fixed at finish (numerics.c) */
    void **params;  /* frozen kernel params, one per operation */
    size_t scratch; /* the largest scratch any kernel needs */
    bool *skip;     /* per operation: left out of every compute (plan.c), or NULL: none */
    /* the temporaries' block (arena.c): per operand a temporary's byte offset in it, the
     * block's bytes, and the last freed execution's block (scratch, then the temporaries),
     * kept for the next execution; every block of a compilation has the same size */
    size_t *temp_off;
    size_t arena;
    uint8_t *spare;
    /* what the client asked for (compilation_ext.c), stored, traced and reported back */
    CompilationType type;
    char *options;            /* createWithOptions / createV2 (owned) */
    char *opt_string;         /* setOptimizationString (owned) */
    bool only_opt_string;
    uint32_t opt_hint, l1_kb;
    bool trim_io, sw_dilated;
    char *cache_dir;          /* setCaching (owned) */
    uint8_t token[NEURON_BYTE_SIZE_OF_CACHE_TOKEN];
    char *report_path;        /* createForDebug: the model's NeuronDebug_setReportPath (owned) */
    NeuronModel *expanded;    /* the model a compiled-network extension operation carried */
    /* the process's pool of MDLA_EMU_THREADS - 1 workers, acquired by the first execution and
     * released with the compilation (NULL: one thread); `threads` is their count with the
     * caller, 0 until then (execution.c) */
    EmuPool *pool;
    int threads;
};

struct NeuronExecution {
    NeuronCompilation *compilation;
    void **data;      /* per operand: its bytes during compute */
    uint8_t *block;   /* the scratch, then the temporaries at the compilation's temp_off */
    bool *in_set, *out_set;
    uint8_t *scratch; /* the block's first threads * scratch_len bytes */
    size_t scratch_len;
    const void **args; /* the input pointers of one operation */
    uint32_t max_in;
    /* hints (execution_ext.c): stored, traced and checked, none changes a result */
    uint8_t boost, flush_hint, runners;
    bool boost_set, computed, batch_done;
    uint64_t loop_timeout;
};

/* The compilation's pool and thread count, started by its first execution (execution.c). */
int emu_compilation_threads(NeuronCompilation *c);
/* Run every operation (NeuronExecution_compute and startComputeWithDependencies). */
int emu_execute(NeuronExecution *execution);

/* createForDebug's per-operation report (NeuronDebug_setReportPath): one line per operation,
 * "<index> <operation code> <nanoseconds>", appended to the path per compute. */
typedef struct {
    void *file; /* FILE *, NULL when no report is asked for */
    uint64_t t0;
} EmuReport;
EmuReport emu_report_open(const NeuronCompilation *c);
void emu_report_begin(EmuReport *r);
void emu_report_op(EmuReport *r, uint32_t index, int32_t code);
/* A left-out operation's line: "<index> <operation code> 0 skipped" (it took no time). */
void emu_report_skip(EmuReport *r, uint32_t index, int32_t code);
void emu_report_close(EmuReport *r);

/* Which operations of `m` (with their frozen params) a compute leaves out: a calloc'd flag per
 * operation, or NULL when it leaves out none (plan.c). */
bool *emu_plan_skips(const NeuronModel *m, void *const *params);

/* Where the temporaries of `m` live in one block (arena.c): a calloc'd byte offset per operand
 * (temporaries only; two share bytes only when no operation runs while both are live) and the
 * block's size in `arena`; NULL when out of memory. */
#define EMU_ARENA_ALIGN 64
size_t *emu_arena_plan(const NeuronModel *m, size_t *arena);
/* An execution's block of `bytes` (EMU_ARENA_ALIGN-aligned): the compilation's kept one, else a
 * new one (NULL when out of memory); give hands it back when the execution ends (kept for the
 * next unless one is kept already, then freed). */
uint8_t *emu_arena_take(NeuronCompilation *c, size_t bytes);
void emu_arena_give(NeuronCompilation *c, uint8_t *block);

/* The arithmetic `c` finishes with: its rounding, the target's accumulator fact, and the
 * environment's overrides, each announced on stderr (numerics.c). */
EmuNumerics emu_numerics(const NeuronCompilation *c);
/* The rounding a compiled network was finished with (its header), for the restored one. */
int32_t emu_blob_rounding(const void *buffer, size_t size);
/* A compilation of `model` with no devices yet (the adapter chooses them at finish). */
int emu_compilation_new(NeuronModel *model, NeuronCompilation **out);
/* The devices for an adapter-chosen compilation: every op of the model on the first device (in
 * Neuron_getDevice order) that maps them all; NEURON_UNMAPPABLE when none does. */
int emu_choose_device(NeuronCompilation *c, const NeuronModel *m);
/* Rebuild a model from an emulator compiled network (NeuronCompilation_storeCompiledNetwork's
 * bytes): the finished model owning its values, its devices, preference and priority. */
int emu_restore_model(const void *buffer, size_t size, NeuronModel **model,
                      const NeuronDevice **devs, uint32_t *n_devs, int32_t *pref, int32_t *prio);
/* The hooks network.c gives NeuronCompilation_finish: the compiled-network extension
 * operation replaced by the network it carries, the cache read before and written after. */
int emu_expand_extension(NeuronCompilation *c);
bool emu_cache_load(NeuronCompilation *c);
void emu_cache_store(NeuronCompilation *c);
void emu_compilation_release_ext(NeuronCompilation *c);
/* MTKNN_ADAPTER_DLA_PLATFORM, when set, must name an SoC of this build's target. */
int emu_check_platform(const char *fn);

#endif /* MDLA_EMU_COMPILATION_H */
