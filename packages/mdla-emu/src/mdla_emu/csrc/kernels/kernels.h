/*
 * kernels.h: what the int8 kernels share. Each kernel file (k_<op>.c, <op> the lower-case name
 * of the schema op it holds, or of the first of the family it holds: k_add.c has ADD and SUB)
 * defines `const EmuKernel emu_k_<op>` per op: a frozen params struct, a prepare that validates
 * (NEURON_BAD_DATA on any problem) and freezes the params, and an eval whose loops read like the
 * formula in the file's header comment. The schema registers a kernel: every op with emu=True
 * is declared and tabled by the generated emu_kernels.h (mdla_emu/codegen.py).
 */
#ifndef MDLA_EMU_KERNELS_H
#define MDLA_EMU_KERNELS_H

#include <stdlib.h>

#include "arith.h"
#include "emu.h"
#include "emu_kernels.h"
#include "simd.h"

/* x86-64 with gcc or clang: the hot loops (GEMM, requantization, depthwise) are compiled twice
 * from one body, for the build's target and for AVX-512 (VNNI); the twin runs only when cpuid
 * reports those features (emu_avx512, set when the library loads). Valgrind's cpuid hides
 * AVX-512, so the leak test runs the first; the aarch64 cross build has only the first. Both
 * are the same integer C, hence the same results.
 *   EMU_BODY void f(params) {...}            the body (always inlined)
 *   EMU_DISPATCHED((params), f, (args))      defines f_base and f_avx512 calling it
 *   EMU_CALL(f, (args))                      calls the one this CPU runs */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMU_DISPATCH 1
#define EMU_BODY static inline __attribute__((always_inline))
#define EMU_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
extern bool emu_avx512;
#define EMU_DISPATCHED(params, body, args)                                                       \
    static void body##_base params { body args; }                                                \
    EMU_AVX512 static void body##_avx512 params { body args; }
#define EMU_CALL(body, args) (emu_avx512 ? body##_avx512 args : body##_base args)
#else
#define EMU_BODY static inline
#define EMU_DISPATCHED(params, body, args) static void body##_base params { body args; }
#define EMU_CALL(body, args) body##_base args
#endif

#define EMU_CHECK(cond)                                                                          \
    do {                                                                                         \
        if (!(cond)) return NEURON_BAD_DATA;                                                     \
    } while (0)

/* Return the result of `call` unless it is NEURON_NO_ERROR (EMU_UNSUPPORTED passes through). */
#define EMU_TRY(call)                                                                            \
    do {                                                                                         \
        const int emu_try_rc = (call);                                                           \
        if (emu_try_rc != NEURON_NO_ERROR) return emu_try_rc;                                    \
    } while (0)

/* The per-channel output pipeline of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED. */
typedef struct {
    int32_t channels;
    int64_t *mult; /* (M_c, s_c) = QuantizeMultiplier(s_in * s_w[c] / s_out), in double */
    int *shift;
    int32_t *bias; /* zeros when the bias operand is omitted */
    /* The same (M_c, s_c) unfolded per channel so one branch-free loop serves every channel:
     * double: lmul = 2^max(s,0), right = max(-s,0), mask = 2^right - 1
     * single: right = 31 - s, round = 2^(30 - s)  (lmul, mask unused) */
    int64_t *lmul, *right, *mask, *round;
    /* narrow (double rounding, depth <= 2^16 and (255 * sum_k |w_ck| + |bias_c|) *
     * 2^max(s_c, 0) < 2^31 for every c: a bound of |acc + bias| from channel c's own weights,
     * so one tiny-scaled channel's huge bias does not widen the others): neither the int32 sum
     * acc + bias nor its product by 2^s_c (s_c > 0) can overflow, so the left shift is exact,
     * SRDHM is one 32x32->64 product and RDBPOT runs in int32 (left32 = max(s_c, 0),
     * m32 = M_c, right32 = max(-s_c, 0), mask32 = 2^right32 - 1). */
    bool narrow;
    int32_t *left32, *m32, *right32, *mask32, *bias32;
    /* simd.h's emu_requant_nudge_avx2 constants when narrow and every channel leaves that form
     * room (|h| + 2^e (|z_out| + 1) + 1 < 2^31 for the bound of |SRDHM|), else NULL: nright32
     * = e (right32, or 1 for a channel of one output code: kernel_common.c nudge_fits),
     * nudge = 2^(e - 1) if e >= 1, plus z_out 2^e; neg = -1 if e >= 1, else 0
     * (NULL when every e is); nm32 = m32 but 0 for a channel whose output is one code k (then
     * e = 1, nudge = 2k + 1); any_left: some left32 is not 0. nm32 holds one element past
     * period * channels (0), which that form reads. */
    int32_t *nudge32, *neg32, *nright32, *nm32;
    bool any_left;
    /* The narrow constants repeat for `period` rows (period * channels is a multiple of 64), so
     * `period` consecutive rows are one flat loop of whole vectors. */
    int32_t period;
    /* emu_isa() at prepare: the narrow rows run simd.c's intrinsics above EMU_ISA_PORTABLE */
    int isa;
    int32_t z_out, lo, hi;
    int rounding;
    bool wrap; /* the compilation's EmuNumerics */
} EmuRequant;

/* Validate input, weights (symmetric; per-tensor or per-channel on `channel_dim`), bias and
 * output quantization and freeze the pipeline. */
int emu_requant_prepare(const NeuronModel *m, uint32_t in, uint32_t w, uint32_t bias,
                        uint32_t out, int32_t channels, uint32_t channel_dim, int32_t fuse,
                        EmuNumerics num, EmuRequant *rq);
void emu_requant_free(EmuRequant *rq);
/* out[c] = clamp(MBQM(acc[c] + bias[c], M_c, s_c) + z_out, lo, hi) for c < channels. */
void emu_requant_row(const EmuRequant *rq, const int32_t *acc, int8_t *out);
/* emu_requant_row over `rows` rows of acc (`acc_stride` apart) into consecutive output rows. */
void emu_requant_rows(const EmuRequant *rq, const int32_t *acc, size_t acc_stride, int8_t *out,
                      int32_t rows);
/* Channels [c0, c0 + n) of rq as a pipeline of n channels (its arrays offset, not copied; valid
 * while rq is): a cut of a layer's output channels requantizes each with its own constants. */
void emu_requant_slice(const EmuRequant *rq, int32_t c0, int32_t n, EmuRequant *out);

/* Numpy broadcasting of two operands to the output (broadcast.c): right-aligned to
 * EMU_MAX_RANK dims, each merged into the dim inside it where both operands allow. */
typedef struct {
    uint32_t dims[EMU_MAX_RANK];
    uint64_t stride_a[EMU_MAX_RANK], stride_b[EMU_MAX_RANK]; /* 0 along a broadcast dim */
    uint32_t elem; /* bytes per element of the three tensors (the output's type) */
} EmuBroadcast;
int emu_broadcast_prepare(const EmuOperand *a, const EmuOperand *b, const EmuOperand *y,
                          EmuBroadcast *bc);
/* Calls fn(ctx, a_offset, b_offset, out_offset, count, a_step, b_step) per innermost run (or
 * the part of one inside a thread's chunk); the elements split over the scratch's threads when
 * there is enough work, `work` units each (EMU_WORK_*). The pointers are to each run's first
 * element (bc->elem bytes each: an int16 run casts them back); steps count elements, 0 or 1. */
typedef void (*EmuRunFn)(const void *ctx, const int8_t *a, const int8_t *b, int8_t *out,
                         uint32_t count, uint32_t a_step, uint32_t b_step);
void emu_broadcast_run(const EmuBroadcast *bc, EmuScratch *s, int64_t work, const void *ctx,
                       const int8_t *a, const int8_t *b, int8_t *out, EmuRunFn fn);
/* Work units per element of the elementwise runs, against a copied byte's 1 (MDLA_EMU_MIN_WORK
 * is in these units): a 256 x 256 table lookup of two codes, a vector-lane formula, and the
 * int16 forms' int64 requantizations per element. */
#define EMU_WORK_TABLE2 4
#define EMU_WORK_LANES 1
#define EMU_WORK_WIDE 16
/* ... and per element of SOFTMAX (two fixed-point exponentials: dozens of int64 operations). */
#define EMU_WORK_EXP 32

/* Elementwise int8 -> int8 ops frozen into a 256-entry table (RELU*, LOGISTIC, TANH,
 * HARD_SWISH): prepare checks the shapes and allocates; eval is out[i] = table[in[i] + 128]. */
typedef struct {
    uint64_t count;
    int8_t table[256];
    int path; /* emu_lut_path() at prepare */
} EmuLut;
int emu_lut_alloc(const NeuronModel *m, const EmuOperation *op, EmuLut **lut);
/* The int8 table of LOGISTIC (logistic) or TANH from x to y (k_logistic.c): table[q + 128] for
 * every code q; the caller has checked y's fixed scale and zero point. */
void emu_act_table(const EmuOperand *x, const EmuOperand *y, bool logistic, int8_t *table);
/* How a table is applied: EMU_LUT_VBMI (emu_lut_vbmi_ready(), simd.h), EMU_LUT_NEON (emu_isa()
 * is EMU_ISA_NEON, simd_neon.h), EMU_LUT_AVX2 (emu_isa() is AVX2 or AVX-512 without VBMI,
 * simd.h) or the C loop; the same bytes on each. emu_lut_apply:
 * y[i] = table[x[i] + 128] for i < n on `path` (emu_lut_path()'s answer). */
enum { EMU_LUT_C = 0, EMU_LUT_VBMI = 1, EMU_LUT_NEON = 2, EMU_LUT_AVX2 = 3 };
int emu_lut_path(void);
void emu_lut_apply(int path, const int8_t *table, const int8_t *x, int8_t *y, uint64_t n);
void emu_lut_eval(const void *params, const void *const *inputs, void *output,
                  EmuScratch *scratch);

/* dims of `o` equal `dims[0..rank)` */
bool emu_dims_are(const EmuOperand *o, uint32_t rank, const uint32_t *dims);
/* A resize's shape: input n, h, w, c (NHWC) and output oh, ow, with its two flags. */
typedef struct {
    int32_t n, h, w, c, oh, ow;
    bool align_corners, half_pixel;
    uint32_t size; /* bytes per element: 1 (int8), 2 (int16, 16x8) */
} EmuResize;
int emu_resize_prepare(const NeuronModel *m, const EmuOperation *op, EmuResize *r);

/* out[p][o] = sum_k a[p][k] * b[o][k]  (int16 x int16 -> int32, rows contiguous in k) */
void emu_gemm_s16(const int16_t *a, const int16_t *b, int32_t *out, int32_t rows, int32_t cols,
                  int32_t depth);

/* The blocked form the convolutions use: rows and cols multiples of EMU_GEMM_MR/NR, depth a
 * multiple of EMU_GEMM_KB, operands zero-padded to those sizes (zeros add nothing), rows of
 * `a` and `b` `depth` apart, rows of `out` `cols` apart. */
#define EMU_GEMM_MR 4
#define EMU_GEMM_NR 4
#define EMU_GEMM_KB 32
void emu_gemm_s16_blocked(const int16_t *a, const int16_t *b, int32_t *out, int32_t rows,
                          int32_t cols, int32_t depth);
static inline int32_t emu_round_up(int32_t v, int32_t m) { return (v + m - 1) / m * m; }

/* Not in the kernel table (emu_kernels.h, generated from the op schema's emu=True ops): the
 * engine's cpu partitions only (k_transpose.c; no target device maps TRANSPOSE through the
 * emulator). */
extern const EmuKernel emu_k_transpose;
extern const EmuKernel emu_k_strided_slice; /* k_strided_slice.c, likewise */


/* AVERAGE_POOL_2D and MAX_POOL_2D: the frozen geometry of a pool whose input and output share
 * scale and zero point, and whose every window holds an image tap (pads < the window); `wide`:
 * int16 activations (16x8, zero point 0; lo, hi over the int16 range). */
typedef struct {
    int32_t n, h, w, c, oh, ow, lo, hi;
    EmuWindow win;
    bool wide;
} EmuPoolingParams;
/* The NHWC output of a windowed op: oh, ow from the window (emu_out_size), and `y` must be
 * [N, oh, ow, channels]; NEURON_BAD_DATA when the window leaves no output or y disagrees. */
/* The input rows (or columns) [*start, *end) of an image `size` long that the window of output
 * o covers (a pooling window's taps inside the image). */
static inline void emu_window_span(int32_t o, int32_t stride, int32_t pad, int32_t filter,
                                   int32_t size, int32_t *start, int32_t *end) {
    const int32_t first = o * stride - pad;
    *start = first < 0 ? 0 : first;
    *end = first + filter < size ? first + filter : size;
}
int emu_window_output(const EmuOperand *x, const EmuWindow *win, uint32_t channels,
                      const EmuOperand *y, int32_t *oh, int32_t *ow);
int emu_pooling_prepare(const NeuronModel *m, const EmuOperation *op, void **out);
/* A pooling eval: `rows` (ctx an EmuPoolJob) over the n * oh output rows, cut over s's threads
 * (a row's work: ow * c * its window's taps). */
typedef struct {
    const EmuPoolingParams *p;
    const void *in; /* int8_t, or int16_t where p->wide */
    void *out;
} EmuPoolJob;
void emu_pooling_run(const EmuPoolingParams *p, const void *in, void *out, EmuScratch *s,
                     EmuTaskFn rows);

/* CONV_2D and DEPTHWISE_CONV_2D on int16 activations (16x8, conv16.c): the int8 kernels'
 * prepare hands an int16-input operation to emu_conv16_prepare and keep its result. */
typedef struct EmuConv16 EmuConv16;
int emu_conv16_prepare(const NeuronModel *m, const EmuOperation *op, bool depthwise,
                       EmuConv16 **out);
void emu_conv16_eval(const EmuConv16 *p, const int16_t *in, int16_t *out, EmuScratch *scratch);
size_t emu_conv16_scratch(const EmuConv16 *p); /* per thread */
void emu_conv16_free(EmuConv16 *p);
/* A multiplier-1 depthwise row's geometry (simd.h) from its window: the image h x w x c and
 * ow outputs per row. The int8 and the 16x8 depthwise build theirs here. */
EmuDwGeom emu_dw_geom(const EmuWindow *win, int32_t h, int32_t w, int32_t c, int32_t ow);
/* FULLY_CONNECTED on int16 activations (16x8, fc16.c), handed over likewise. */
typedef struct EmuFc16 EmuFc16;
int emu_fc16_prepare(const NeuronModel *m, const EmuOperation *op, EmuFc16 **out);
void emu_fc16_eval(const EmuFc16 *p, const int16_t *in, int16_t *out);
void emu_fc16_free(EmuFc16 *p);
/* SOFTMAX on int16 activations (16x8, softmax16.c), handed over likewise (free() releases it);
 * `ax` the axis in [0, rank). */
typedef struct EmuSoftmax16 EmuSoftmax16;
int emu_softmax16_prepare(const NeuronModel *m, const EmuOperation *op, float beta, uint32_t ax,
                          int rounding, EmuSoftmax16 **out);
void emu_softmax16_eval(const EmuSoftmax16 *p, const int16_t *x, int16_t *y);

#endif /* MDLA_EMU_KERNELS_H */
