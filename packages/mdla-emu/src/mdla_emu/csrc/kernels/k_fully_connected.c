/*
 * FULLY_CONNECTED, int8 (TFLite reference_integer_ops/fully_connected.h).
 *
 *   acc[b, o] = bias[o] + sum_i w[o, i] * (x[b, i] - z_in)        (input flattened to [B, I])
 *   double:  out = clamp(round_half_away((double)acc * (s_in * s_w[o] / s_out)) + z_out)
 *   single:  out = clamp(MBQM_single(acc, M_o, s_o) + z_out)
 *
 * "double" follows LiteRT's BUILTIN_REF (and mdla_quant), which requantizes FULLY_CONNECTED in
 * float64 since 2025-04 instead of gemmlowp double rounding. Weights (O, I), per-tensor or
 * per-channel on dim 0. The output is [B, O] or keeps the input's leading dims ([..., O]).
 * When emu_gemm_u8_ready() at prepare, the sums run on CONV_2D's 8-bit GEMM (gemm.h: the
 * same integers; the zero point folded into each unit's start value), EMU_U8_MR input rows
 * at a time (a last partial block padded with zero rows, computed and dropped).
 */
#include <string.h>

#include "gemm.h"
#include "kernels.h"

typedef struct {
    int32_t batch, in, units;
    int32_t z_in;
    int16_t *weights; /* [units][in] */
    double *real;     /* s_in * s_w[o] / s_out (double rounding) */
    EmuRequant rq;
    bool u8;          /* the 8-bit GEMM (weights NULL): kpad4 = in to 4, cpad = units to NR */
    int32_t kpad4, cpad;
    int8_t *packed;
    int32_t *init;
    EmuFc16 *wide; /* int16 activations (fc16.c): every other field unused */
} FcParams;

static void fc_release(void *params) {
    FcParams *p = params;
    if (p == NULL) return;
    free(p->weights);
    free(p->real);
    free(p->packed);
    free(p->init);
    emu_fc16_free(p->wide);
    emu_requant_free(&p->rq);
    free(p);
}

static int fc_fill(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, FcParams *p) {
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    int32_t fuse = 0;
    EMU_CHECK(emu_scalar_i32(m, op->in[3], &fuse) == NEURON_NO_ERROR && fuse >= 0 && fuse <= 3);
    EMU_CHECK(x->rank >= 2 && f->rank == 2 && f->has_value && f->dims[1] <= 65536);
    const uint64_t elements = emu_elements(x);
    EMU_CHECK(elements % f->dims[1] == 0);
    p->in = (int32_t)f->dims[1];
    p->units = (int32_t)f->dims[0];
    p->batch = (int32_t)(elements / f->dims[1]);
    EMU_CHECK(y->rank >= 1 && y->dims[y->rank - 1] == f->dims[0] &&
              emu_elements(y) == (uint64_t)p->batch * p->units);
    p->z_in = x->zero_point;
    int rc = emu_requant_prepare(m, op->in[0], op->in[1], op->in[2], op->out[0], p->units, 0, fuse,
                                 num, &p->rq);
    if (rc != NEURON_NO_ERROR) return rc;
    p->real = malloc((size_t)p->units * sizeof *p->real);
    if (p->real == NULL) return NEURON_OUT_OF_MEMORY;
    for (int32_t o = 0; o < p->units; o++) {
        const float s_w = f->channel_count ? f->channel_scales[o] : f->scale;
        p->real[o] = (double)x->scale * (double)s_w / (double)y->scale;
    }
    const int8_t *wv = f->value;
    p->u8 = emu_gemm_u8_ready();
    if (p->u8) {
        p->kpad4 = emu_round_up(p->in, EMU_U8_KB);
        p->cpad = emu_round_up(p->units, EMU_U8_NR);
        p->packed = malloc((size_t)p->cpad * p->kpad4);
        p->init = malloc((size_t)p->cpad * sizeof *p->init);
        if (p->packed == NULL || p->init == NULL) return NEURON_OUT_OF_MEMORY;
        emu_gemm_u8_pack(wv, p->units, p->in, p->z_in, p->kpad4, p->cpad, p->packed, p->init);
        return NEURON_NO_ERROR;
    }
    p->weights = malloc((size_t)p->units * p->in * sizeof *p->weights);
    if (p->weights == NULL) return NEURON_OUT_OF_MEMORY;
    for (size_t i = 0; i < (size_t)p->units * p->in; i++) p->weights[i] = wv[i];
    return NEURON_NO_ERROR;
}

static int fc_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    FcParams *p = calloc(1, sizeof *p);
    *out = NULL;
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    int rc = m->opnds[op->in[0]].type == NEURON_TENSOR_QUANT16_SYMM
                 ? emu_fc16_prepare(m, op, &p->wide)
                 : fc_fill(m, op, num, p);
    if (rc != NEURON_NO_ERROR) {
        fc_release(p);
        return rc;
    }
    *out = p;
    return NEURON_NO_ERROR;
}

/* Scratch: the input row (int16; on the 8-bit path EMU_U8_MR rows of kpad4 bytes), then the
 * accumulators (int32; EMU_U8_MR rows of `units` on the 8-bit path) at the next 64-byte
 * boundary: straight after an odd-length row they would sit off int32 alignment. */
static size_t fc_acc_offset(const FcParams *p) {
    const size_t rows = p->u8 ? (size_t)EMU_U8_MR * p->kpad4 : (size_t)p->in * sizeof(int16_t);
    return (rows + 63) / 64 * 64;
}

static size_t fc_scratch(const void *params) {
    const FcParams *p = params;
    if (p->wide != NULL) return 0;
    return fc_acc_offset(p) + (size_t)(p->u8 ? EMU_U8_MR : 1) * p->units * sizeof(int32_t);
}

/* The output stage of one row of sums (both rounding modes, formulas in the header). */
static void fc_output(const FcParams *p, const int32_t *acc, int8_t *ob) {
    if (p->rq.rounding == EMU_ROUND_SINGLE) {
        emu_requant_row(&p->rq, acc, ob);
        return;
    }
    for (int32_t o = 0; o < p->units; o++) {
        const int64_t v = (int64_t)acc[o] + p->rq.bias[o];
        const double r = emu_round_away((double)v * p->real[o]);
        const double q = r + (double)p->rq.z_out; /* |r| can exceed int32: clamp in double */
        ob[o] = (int8_t)(q < p->rq.lo ? p->rq.lo : (q > p->rq.hi ? p->rq.hi : (int32_t)q));
    }
}

typedef struct {
    const FcParams *p;
    const int8_t *x;
    int8_t *out;
} FcJob;

/* The 8-bit path, blocks [begin, end) of EMU_U8_MR rows as u = x + EMU_U8_OFFSET (zeros past
 * `in` meet zero weights; padding rows are zeros too, their sums dropped). */
static void fc_blocks_u8(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const FcJob *j = ctx;
    const FcParams *p = j->p;
    uint8_t *rows = scratch;
    int32_t *acc = (int32_t *)(scratch + fc_acc_offset(p));
    const int32_t in = p->in, kpad4 = p->kpad4;
    for (int64_t blk = begin; blk < end; blk++) {
        const int32_t b0 = (int32_t)blk * EMU_U8_MR;
        const int32_t n = p->batch - b0 < EMU_U8_MR ? p->batch - b0 : EMU_U8_MR;
        memset(rows, 0, (size_t)EMU_U8_MR * kpad4);
        for (int32_t r = 0; r < n; r++) {
            const int8_t *restrict src = j->x + (size_t)(b0 + r) * in;
            uint8_t *restrict dst = rows + (size_t)r * kpad4;
            for (int32_t i = 0; i < in; i++) dst[i] = (uint8_t)(src[i] + EMU_U8_OFFSET);
        }
        emu_gemm_u8(rows, p->packed, p->init, acc, EMU_U8_MR, p->units, kpad4);
        for (int32_t r = 0; r < n; r++)
            fc_output(p, acc + (size_t)r * p->units, j->out + (size_t)(b0 + r) * p->units);
    }
}

/* The int16 path, batch rows [begin, end). */
static void fc_rows_s16(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const FcJob *j = ctx;
    const FcParams *p = j->p;
    int16_t *row = (int16_t *)scratch;
    int32_t *acc = (int32_t *)(scratch + fc_acc_offset(p));
    for (int64_t b = begin; b < end; b++) {
        const int8_t *xb = j->x + (size_t)b * p->in;
        for (int32_t i = 0; i < p->in; i++) row[i] = (int16_t)(xb[i] - p->z_in);
        emu_gemm_s16(row, p->weights, acc, 1, p->units, p->in);
        fc_output(p, acc, j->out + (size_t)b * p->units);
    }
}

/* Batch rows split over the threads (each row's sums are exact integers, whatever block it
 * shares); one row of work is in * units multiply-adds. */
static void fc_eval(const void *params, const void *const *inputs, void *output,
                    EmuScratch *scratch) {
    const FcParams *p = params;
    if (p->wide != NULL) {
        emu_fc16_eval(p->wide, inputs[0], output);
        return;
    }
    const FcJob job = {p, inputs[0], output};
    const int64_t row_work = (int64_t)p->in * p->units / 16; /* a MAC costs less than a byte */
    if (p->u8) {
        const int64_t blocks = (p->batch + EMU_U8_MR - 1) / EMU_U8_MR;
        emu_parallel_for(scratch, blocks, emu_par_grain(scratch, row_work * EMU_U8_MR),
                         fc_blocks_u8, &job);
        return;
    }
    emu_parallel_for(scratch, p->batch, emu_par_grain(scratch, row_work), fc_rows_s16, &job);
}

const EmuKernel emu_k_fully_connected = {NEURON_FULLY_CONNECTED, "FULLY_CONNECTED", fc_prepare,
                                         fc_eval, fc_scratch, fc_release};
