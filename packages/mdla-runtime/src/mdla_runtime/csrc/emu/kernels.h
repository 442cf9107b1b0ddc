/*
 * kernels.h: what the int8 kernels share. Each kernel file (k_<op>.c) holds one op: a frozen
 * params struct, a prepare that validates (NEURON_BAD_DATA on any problem) and freezes the
 * params, and an eval whose loops read like the formula in the file's header comment.
 */
#ifndef MDLA_EMU_KERNELS_H
#define MDLA_EMU_KERNELS_H

#include <stdlib.h>

#include "arith.h"
#include "emu.h"

#define EMU_CHECK(cond)                                                                          \
    do {                                                                                         \
        if (!(cond)) return NEURON_BAD_DATA;                                                     \
    } while (0)

/* The per-channel output pipeline of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED. */
typedef struct {
    int32_t channels;
    int64_t *mult; /* (M_c, s_c) = QuantizeMultiplier(s_in * s_w[c] / s_out), in double */
    int *shift;
    int32_t *bias; /* zeros when the bias operand is omitted */
    int32_t z_out, lo, hi;
    int rounding;
} EmuRequant;

/* Validate input, weights (symmetric; per-tensor or per-channel on `channel_dim`), bias and
 * output quantization and freeze the pipeline. */
int emu_requant_prepare(const NeuronModel *m, uint32_t in, uint32_t w, uint32_t bias,
                        uint32_t out, int32_t channels, uint32_t channel_dim, int32_t fuse,
                        int rounding, EmuRequant *rq);
void emu_requant_free(EmuRequant *rq);
/* out[c] = clamp(MBQM(acc[c] + bias[c], M_c, s_c) + z_out, lo, hi) for c < channels. */
void emu_requant_row(const EmuRequant *rq, const int32_t *acc, int8_t *out);

/* Numpy broadcasting of two operands to the output, right-aligned to EMU_MAX_RANK dims. */
typedef struct {
    uint32_t dims[EMU_MAX_RANK];
    uint64_t stride_a[EMU_MAX_RANK], stride_b[EMU_MAX_RANK]; /* 0 along a broadcast dim */
} EmuBroadcast;
int emu_broadcast_prepare(const EmuOperand *a, const EmuOperand *b, const EmuOperand *y,
                          EmuBroadcast *bc);
/* Calls fn(ctx, a_offset, b_offset, out_offset, count, a_step, b_step) per innermost run. */
typedef void (*EmuRunFn)(const void *ctx, const int8_t *a, const int8_t *b, int8_t *out,
                         uint32_t count, uint32_t a_step, uint32_t b_step);
void emu_broadcast_run(const EmuBroadcast *bc, const void *ctx, const int8_t *a, const int8_t *b,
                       int8_t *out, EmuRunFn fn);

/* Elementwise int8 -> int8 ops frozen into a 256-entry table (RELU*, LOGISTIC, TANH,
 * HARD_SWISH): prepare checks the shapes and allocates; eval is out[i] = table[in[i] + 128]. */
typedef struct {
    uint64_t count;
    int8_t table[256];
} EmuLut;
int emu_lut_alloc(const NeuronModel *m, const EmuOperation *op, EmuLut **lut);
void emu_lut_eval(const void *params, const void *const *inputs, void *output,
                  EmuScratch *scratch);

/* dims of `o` equal `dims[0..rank)` */
bool emu_dims_are(const EmuOperand *o, uint32_t rank, const uint32_t *dims);

/* out[p][o] = sum_k a[p][k] * b[o][k]  (int16 x int16 -> int32, rows contiguous in k) */
void emu_gemm_s16(const int16_t *a, const int16_t *b, int32_t *out, int32_t rows, int32_t cols,
                  int32_t depth);

/* Every kernel, for the table in kernel_table.c. */
#define EMU_KERNEL_DECL(name) extern const EmuKernel name;
EMU_KERNEL_DECL(emu_k_conv_2d)
EMU_KERNEL_DECL(emu_k_depthwise_conv_2d)
EMU_KERNEL_DECL(emu_k_fully_connected)
EMU_KERNEL_DECL(emu_k_average_pool_2d)
EMU_KERNEL_DECL(emu_k_max_pool_2d)
EMU_KERNEL_DECL(emu_k_add)
EMU_KERNEL_DECL(emu_k_sub)
EMU_KERNEL_DECL(emu_k_mul)
EMU_KERNEL_DECL(emu_k_relu)
EMU_KERNEL_DECL(emu_k_relu1)
EMU_KERNEL_DECL(emu_k_relu6)
EMU_KERNEL_DECL(emu_k_logistic)
EMU_KERNEL_DECL(emu_k_tanh)
EMU_KERNEL_DECL(emu_k_hard_swish)
EMU_KERNEL_DECL(emu_k_softmax)
EMU_KERNEL_DECL(emu_k_concatenation)
EMU_KERNEL_DECL(emu_k_pad)
EMU_KERNEL_DECL(emu_k_reshape)
EMU_KERNEL_DECL(emu_k_mean)
EMU_KERNEL_DECL(emu_k_resize_bilinear)

#endif /* MDLA_EMU_KERNELS_H */
