/*
 * emu.h: the host Neuron emulator's internal model (libneuron_emu.so).
 *
 * The public face is neuron_abi.h; this header holds what the API files and the kernels share:
 * operands and operations as the caller built them, the frozen kernel table, the per-device op
 * support generated from the target data file (emu_targets.c, written by emulator.py from
 * mdla_target/targets/mdla3.5.toml), and the fake APU runtime-PM node.
 */
#ifndef MDLA_EMU_H
#define MDLA_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "neuron_abi.h"
#include "numerics.h"

#define EMU_MAX_RANK 6
#define EMU_IMMEDIATE_COPY_BYTES 128 /* NEURON_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES */

enum { EMU_ROUND_DOUBLE = MDLA_EMU_ROUNDING_DOUBLE, EMU_ROUND_SINGLE = MDLA_EMU_ROUNDING_SINGLE };

/* The arithmetic a compilation's kernels run with, fixed at NeuronCompilation_finish (abi/
 * numerics.c): the requantization rounding (MdlaEmu_setRounding, else double) and whether an
 * int32 overflow in it wraps (the target's `[arith] accumulator` fact) or saturates. */
typedef struct {
    int rounding;
    bool wrap;
} EmuNumerics;

/* A kernel's prepare returns this for an operand form NNAPI defines that the emulator does not
 * compute (an NCHW layout flag set): NeuronModel_finish accepts the model, the support queries
 * report that operation unsupported (a client leaves it to its CPU), compilation refuses it. */
#define EMU_UNSUPPORTED NEURON_UNMAPPABLE

enum { EMU_TEMP = 0, EMU_MODEL_INPUT, EMU_MODEL_OUTPUT, EMU_CONST };

typedef struct {
    int32_t type;
    uint32_t rank;
    uint32_t dims[EMU_MAX_RANK];
    float scale;
    int32_t zero_point;
    uint32_t channel_dim;   /* per-channel operands only */
    uint32_t channel_count; /* 0 = no per-channel params */
    float *channel_scales;  /* owned */
    int lifetime;
    bool has_value;
    bool omitted;      /* setOperandValue(NULL, 0): an optional operand left out */
    const void *value; /* points into `owned` (small or restored values) or the caller's buffer */
    size_t value_len;
    void *owned;
} EmuOperand;

typedef struct {
    int32_t code;
    uint32_t n_in, n_out;
    uint32_t *in, *out; /* owned */
} EmuOperation;

struct NeuronModel {
    bool finished;
    bool io_identified;
    bool relax_fp16;                 /* relaxComputationFloat32toFloat16: no float kernel reads it */
    bool suppress_in, suppress_out;  /* suppress*Conversion: the emulator converts nothing anyway */
    char *name;                      /* setName (owned; not in a compilation's snapshot) */
    char *report_path;               /* NeuronDebug_setReportPath (owned) */
    EmuOperand *opnds;
    uint32_t n_opnds, cap_opnds;
    EmuOperation *ops;
    uint32_t n_ops, cap_ops;
    uint32_t *inputs, *outputs; /* owned */
    uint32_t n_inputs, n_outputs;
};

/* ---- the call trace and diagnostics (trace.c) ---------------------------------------------- */
/* MDLA_EMU_TRACE=path appends one line per ABI call: the function's name, then the hint values
 * the call stores (boost, priority, L1 size, ...), so what a client asked for is reported. Calls
 * the emulator makes to itself (restoring a compiled network) are not the client's: silenced. */
void emu_trace(const char *fn, const char *fmt, ...);
void emu_trace_silence(int delta); /* +1 / -1 around internal calls (per thread) */
#define EMU_TRACE() emu_trace(__func__, NULL)
/* One line on stderr, "libneuron_emu: <fn>: <why>": for what the emulator cannot do where a
 * vendor library would (extension operations, vendor DLA blobs, AHardwareBuffer). */
void emu_note(const char *fn, const char *fmt, ...);

/* Extensions: the emulator knows one, com.mediatek.compiled_network (a compiled network carried
 * as an operand value, LiteRT's and ExecuTorch's load route). Its operand and operation types
 * are EMU_EXT_PREFIX << 16 | code, NNAPI's encoding of extension types. */
#define EMU_EXT_COMPILED_NETWORK "com.mediatek.compiled_network"
#define EMU_EXT_PREFIX 1
#define EMU_OP_COMPILED_NETWORK (EMU_EXT_PREFIX << 16) /* the extension's operation 0 */
#define EMU_OP_PLACEHOLDER 10001 /* LiteRT's NEURON_UNKNOWN: "not for the NPU" in its query */
bool emu_is_ext_type(int32_t type);

/* ---- operands (model.c) -------------------------------------------------------------------- */
size_t emu_type_size(int32_t type); /* bytes per element, 0 for an unknown type */
bool emu_is_tensor(int32_t type);
bool emu_is_int8_act(int32_t type); /* TENSOR_QUANT8_ASYMM_SIGNED or TENSOR_QUANT8_SYMM */
uint64_t emu_elements(const EmuOperand *o);
size_t emu_bytes(const EmuOperand *o);
bool emu_same_quant(const EmuOperand *a, const EmuOperand *b);
int emu_scalar_i32(const NeuronModel *m, uint32_t idx, int32_t *v);
int emu_scalar_bool(const NeuronModel *m, uint32_t idx, bool *v);
int emu_scalar_f32(const NeuronModel *m, uint32_t idx, float *v);
void emu_model_release(NeuronModel *m);
/* A finished deep copy owning every value (a compilation's snapshot; NULL on out-of-memory). */
NeuronModel *emu_model_clone(const NeuronModel *m);

/* ---- op signatures and geometry (validate.c) ----------------------------------------------- */
typedef struct {
    int32_t pad_top, pad_bottom, pad_left, pad_right;
    int32_t stride_h, stride_w, dilation_h, dilation_w;
    int32_t filter_h, filter_w; /* pools: the window; convs: from the filter */
    int32_t multiplier;         /* depthwise */
    int32_t fuse;
    bool implicit; /* the padding-code form (pads computed here, TF-asymmetric SAME) */
} EmuWindow;

/* Structural checks at addOperation: operand counts and types of every op the emulator knows. */
int emu_check_signature(const NeuronModel *m, const EmuOperation *op);
/* Pads, strides, dilations, filter and fuse of CONV_2D, DEPTHWISE_CONV_2D and the pools. */
int emu_window(const NeuronModel *m, const EmuOperation *op, EmuWindow *w);
/* TF SAME pads of one axis: total = max((ceil(n/s) - 1)*s + d*(k-1) + 1 - n, 0), extra after. */
void emu_same_pads(int32_t n, int32_t k, int32_t s, int32_t d, int32_t *before, int32_t *after);
int emu_out_size(int32_t n, int32_t k, int32_t s, int32_t d, int32_t before, int32_t after);

/* ---- kernels (k_*.c) ------------------------------------------------------------------------ */
typedef struct EmuPool EmuPool;
typedef struct {
    uint8_t *scratch; /* im2col and accumulator space, sized by the kernels' scratch_bytes */
    size_t scratch_len; /* per thread: thread t's space starts at scratch + t * scratch_len */
    EmuPool *pool;      /* NULL: one thread */
} EmuScratch;

/* ---- worker threads (pool.c) ---------------------------------------------------------------- */
#define EMU_MAX_THREADS 64
/* fn(ctx, begin, end, scratch): compute items [begin, end) with this thread's scratch. */
typedef void (*EmuTaskFn)(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch);
/* The thread count the environment variable `var` asks for (MDLA_EMU_THREADS for an execution,
 * MDLA_CPU_THREADS for a cpu partition): 1..EMU_MAX_THREADS, default 1. */
int emu_env_threads(const char *var);
/* The process's pool of threads - 1 workers (the caller is the first thread) for an owner to
 * pass to emu_parallel_for: started by the first owner, shared by all, joined when the last
 * releases it; NULL for one thread (or when no thread starts). */
EmuPool *emu_pool_acquire(int threads);
void emu_pool_release(EmuPool *pool);
int emu_pool_threads(const EmuPool *pool);
/* Run fn over [0, count) in equal contiguous chunks, four per thread as long as each holds a
 * grain (one chunk, on the caller, when the job holds less than two); a thread may run several,
 * each with its own scratch (which fn may accumulate into); returns when all are done. */
void emu_parallel_for(EmuScratch *s, int64_t count, int64_t grain, EmuTaskFn fn,
                      const void *ctx);
/* How many jobs emu_parallel_for has cut over two threads or more in this process (tests ask
 * which ops split). */
uint64_t emu_split_jobs(void);
/* The least work a thread takes (MDLA_EMU_MIN_WORK overrides; tests set 1 to cut everything). */
#define EMU_MIN_WORK 16384
/* How long an idle thread spins for the next job (or the caller for the workers) before it
 * sleeps, in microseconds (MDLA_EMU_SPIN_US overrides; 0 sleeps at once). */
#define EMU_SPIN_US 200
/* Items per grain when each item is `work_per_item` units: the pool's minimum work, rounded up. */
int64_t emu_par_grain(const EmuScratch *s, int64_t work_per_item);

typedef struct {
    int32_t code;
    const char *name;
    /* Validate everything value-dependent and freeze the params; NEURON_BAD_DATA on a problem,
     * EMU_UNSUPPORTED on a valid form the emulator does not compute. */
    int (*prepare)(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **params);
    /* inputs[i] is the data of op input i (activations or constants); out the output's. */
    void (*eval)(const void *params, const void *const *inputs, void *out, EmuScratch *scratch);
    size_t (*scratch_bytes)(const void *params); /* NULL: no scratch */
    void (*release)(void *params);               /* frees the params and all they own */
} EmuKernel;

const EmuKernel *emu_kernel(int32_t code); /* NULL when the emulator has no int8 kernel */
/* A MUL's frozen params: the input (0 or 1) it reads as x when it is SiLU's MUL(x, LOGISTIC(x))
 * evaluated as a table of x alone, the other input unread (k_mul.c); -1 when it reads both. */
int emu_mul_silu_x(const void *params);

/* ---- devices and op support (device.c, emu_targets.c) ------------------------------------- */
enum { EMU_DT_INT8 = 1, EMU_DT_UINT8 = 2, EMU_DT_INT16 = 4, EMU_DT_FLOAT16 = 8, EMU_DT_FLOAT32 = 16 };
enum { EMU_PAD_ANY = 0, EMU_PAD_EXPLICIT = 1, EMU_PAD_SAME_VALID = 2 };

typedef struct {
    int32_t code;
    bool supported; /* the int8 form maps */
    bool int16;     /* the 16x8 form (int16 activations) maps */
    bool per_channel;
    int padding;
    bool broadcast;
    bool shared_scale;
    bool keeps_input_scale;
    bool has_fixed_output;
    float fixed_output_scale;
    int32_t fixed_output_zero_point;
    uint32_t dtypes;
    const char *reason;
} EmuTargetOp;

typedef struct {
    const char *name;
    uint32_t max_rank;
    uint32_t max_dim;
    uint32_t dtypes;
    uint32_t n_ops;
    const EmuTargetOp *ops;
} EmuTargetDevice;

extern const char *const emu_target_name;
extern const char *const emu_target_socs; /* the target file's `soc`: "mt6886" or "" */
extern const EmuTargetDevice emu_target_devices[];
extern const uint32_t emu_target_device_count;
/* The target's `[arith] accumulator` fact: true when an int32 overflow in a requantization
 * wraps, false when it saturates (the default of every compilation's EmuNumerics). */
extern const bool emu_target_accumulator_wrap;

struct NeuronDevice {
    uint32_t index;
    const EmuTargetDevice *spec;
};

#define EMU_MAX_DEVICES 8
/* The device of a handle (NULL when the pointer is not one of ours). */
const EmuTargetDevice *emu_device_spec(const NeuronDevice *d);
bool emu_device_is_apu(const EmuTargetDevice *d);
/* Whether `op` maps on the device: target data, the emulator's kernels, the device's limits. */
/* Whether `op`'s kernel takes its operands (prepare, double rounding, params released):
 * NEURON_NO_ERROR, EMU_UNSUPPORTED (a valid form the emulator does not compute) or
 * NEURON_BAD_DATA; NEURON_NO_ERROR for an op without a kernel (generic checks only). */
int emu_op_validate(const NeuronModel *m, const EmuOperation *op);
bool emu_op_supported(const EmuTargetDevice *d, const NeuronModel *m, const EmuOperation *op);
/* Every op maps on the union of the devices (one unsupported op: nothing maps). */
/* Whether one of `devs` maps `op` of `m`. */
bool emu_model_op_mappable(const NeuronModel *m, const EmuOperation *op,
                           const EmuTargetDevice *const *devs, uint32_t n);
/* Names the first operation of `m` no device of `devs` maps on the error log, as `fn`'s;
 * n == 0: every device of the target. */
void emu_note_unmappable(const char *fn, const NeuronModel *m, const EmuTargetDevice *const *devs,
                         uint32_t n);
bool emu_model_mappable(const NeuronModel *m, const EmuTargetDevice *const *devs, uint32_t n);

/* ---- the fake APU runtime-PM node (sysfs.c) ----------------------------------------------- */
void emu_apu_begin(void); /* resume (if suspended) before a compute on an APU device */
void emu_apu_end(void);   /* arm the autosuspend timer after it */

#endif /* MDLA_EMU_H */
