/*
 * CONV_2D and DEPTHWISE_CONV_2D, 16x8 (int16 activations, TENSOR_QUANT16_SYMM, zero point 0;
 * int8 symmetric weights; the int64 bias lowered as TENSOR_INT32; TFLite
 * reference_integer_ops/conv.h and depthwise_conv.h, their int16-input templates):
 *
 *   acc[n,y,x,o] = bias[o] + sum over the taps inside the image of w[o, tap] * x[tap]   int64
 *   (M_o, s_o) = QuantizeMultiplier(s_in * s_w[o] / s_out)      double, from float32 scales
 *   M16 = (M_o + 2^15) >> 16, or 0x7FFF when M_o >= 0x7FFF0000  (the int64 MBQM overload)
 *   out = clamp((int32)((acc * M16 + 2^(14 - s_o)) >> (15 - s_o)), act_min, act_max)
 *
 * A conv's filter is [O, KH, KW, I]; a depthwise's [1, KH, KW, O], output channel o reading
 * input channel o / multiplier. A depthwise with multiplier 1 and at most DW16_TAPS taps sums
 * each output row in int32 (simd.h emu_dw16_row: exact, |sum| <= 2^30), spread over the
 * emulator's threads; any other runs one plain int64 loop per output element.
 *
 * A conv runs as a GEMM on int16 codes: tiles of CONV16_TILE output pixels, each pixel's taps
 * laid out as an im2col row of depth = KH*KW*I int16 codes (a tap outside the image is 0, the
 * real zero: zero point 0), cut into blocks of kb = min(CONV16_KB, depth rounded up to 4) taps
 * (the last padded with zeros, the filter widened to int16 and padded likewise at prepare). Per block emu_gemm_s16 sums in int32,
 * exactly: |x| <= 2^15 and |w| <= 2^7, so |sum| <= 2^8 * 2^22 = 2^30; the blocks add in int64,
 * as the reference's int64 accumulator, so every sum is the plain loop's integer.
 */
#include <string.h>

#include "kernels.h"
#include "simd.h"
#include "simd_neon.h"

#define CONV16_TILE 32 /* output pixels per GEMM tile */
#define CONV16_KB 256  /* taps per int32 block: |sum| <= 2^30 */
#define DW16_TAPS 256  /* a depthwise's window at most this: its int32 row sums are exact */

struct EmuConv16 {
    int32_t n, h, w, ci, oh, ow, co, kh, kw;
    bool depthwise;
    EmuWindow win;
    const int8_t *filter; /* the constant operand's data */
    int64_t *m16;
    int32_t *total, *bias;
    int32_t lo, hi;
    int32_t depth, kb, blocks; /* a conv's GEMM: KH*KW*I taps in `blocks` blocks of kb */
    int16_t *wide;             /* [blocks][co][kb]: the filter widened, zero-padded; or a
                                  row-summed depthwise's [KH * KW][co] filter widened */
    int isa;                   /* a row-summed depthwise: emu_isa() at prepare */
};

void emu_conv16_free(EmuConv16 *p) {
    if (p == NULL) return;
    free(p->m16);
    free(p->total);
    free(p->bias);
    free(p->wide);
    free(p);
}

/* A depthwise whose rows emu_dw16_row sums: multiplier 1, at most DW16_TAPS taps. */
static bool dw16_rows(const EmuConv16 *p) {
    return p->depthwise && p->win.multiplier == 1 && p->kh * p->kw <= DW16_TAPS;
}

/* A row-summed depthwise's filter widened to int16, [KH * KW][co] as it was. */
static int dw16_widen(EmuConv16 *p) {
    const size_t n = (size_t)p->kh * p->kw * p->co;
    p->wide = malloc(n * sizeof *p->wide);
    if (p->wide == NULL) return NEURON_OUT_OF_MEMORY;
    for (size_t e = 0; e < n; e++) p->wide[e] = p->filter[e];
    p->isa = emu_isa();
    return NEURON_NO_ERROR;
}

/* A conv's filter as GEMM blocks (see the header). */
static int conv16_widen(EmuConv16 *p) {
    p->depth = p->kh * p->kw * p->ci;
    p->kb = p->depth < CONV16_KB ? emu_round_up(p->depth, 4) : CONV16_KB;
    p->blocks = (p->depth + p->kb - 1) / p->kb;
    p->wide = calloc((size_t)p->blocks * p->co * p->kb, sizeof *p->wide);
    if (p->wide == NULL) return NEURON_OUT_OF_MEMORY;
    for (int32_t o = 0; o < p->co; o++)
        for (int32_t k = 0; k < p->depth; k++)
            p->wide[((size_t)(k / p->kb) * p->co + o) * p->kb + k % p->kb] =
                p->filter[(size_t)o * p->depth + k];
    return NEURON_NO_ERROR;
}

static int conv16_quant(const NeuronModel *m, const EmuOperation *op, EmuConv16 *p) {
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *b = &m->opnds[op->in[2]], *y = &m->opnds[op->out[0]];
    EMU_CHECK(x->zero_point == 0 && y->zero_point == 0);
    const bool per_channel = f->type == NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL;
    EMU_CHECK(per_channel ? f->channel_count == (uint32_t)p->co
                          : (f->zero_point == 0 && f->scale > 0.0f));
    EMU_CHECK(b->has_value && (b->omitted || (b->rank == 1 && b->dims[0] == (uint32_t)p->co)));
    if (!b->omitted) memcpy(p->bias, b->value, (size_t)p->co * sizeof *p->bias);
    for (int32_t c = 0; c < p->co; c++) {
        const float s_w = per_channel ? f->channel_scales[c] : f->scale;
        const double real = (double)x->scale * (double)s_w / (double)y->scale;
        int64_t mm;
        int s;
        EMU_CHECK(emu_quantize_multiplier(real, EMU_ROUND_DOUBLE, &mm, &s) && s <= 7);
        p->m16[c] = mm < 0x7FFF0000 ? (mm + 32768) >> 16 : 0x7FFF;
        p->total[c] = 15 - s;
    }
    emu_activation_range16(p->win.fuse, y->scale, &p->lo, &p->hi);
    return NEURON_NO_ERROR;
}

int emu_conv16_prepare(const NeuronModel *m, const EmuOperation *op, bool depthwise,
                       EmuConv16 **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *f = &m->opnds[op->in[1]],
                     *y = &m->opnds[op->out[0]];
    EMU_CHECK(x->type == NEURON_TENSOR_QUANT16_SYMM && y->type == NEURON_TENSOR_QUANT16_SYMM);
    EMU_CHECK(x->rank == 4 && f->rank == 4 && f->has_value);
    EmuWindow win;
    EMU_TRY(emu_window(m, op, &win));
    const uint32_t co = depthwise ? f->dims[3] : f->dims[0];
    EMU_CHECK(depthwise ? (f->dims[0] == 1 && win.multiplier >= 1 &&
                           co == x->dims[3] * (uint32_t)win.multiplier)
                        : f->dims[3] == x->dims[3]);
    int32_t oh, ow;
    EMU_CHECK(emu_window_output(x, &win, co, y, &oh, &ow) == NEURON_NO_ERROR);
    EmuConv16 *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    *p = (EmuConv16){(int32_t)x->dims[0], (int32_t)x->dims[1], (int32_t)x->dims[2],
                     (int32_t)x->dims[3], oh, ow, (int32_t)co, win.filter_h, win.filter_w,
                     depthwise, win, f->value, NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL, 0};
    p->m16 = malloc((size_t)co * sizeof *p->m16);
    p->total = malloc((size_t)co * sizeof *p->total);
    p->bias = calloc(co, sizeof *p->bias);
    if (p->m16 == NULL || p->total == NULL || p->bias == NULL) {
        emu_conv16_free(p);
        return NEURON_OUT_OF_MEMORY;
    }
    int rc = conv16_quant(m, op, p);
    if (rc == NEURON_NO_ERROR && !depthwise) rc = conv16_widen(p);
    if (rc == NEURON_NO_ERROR && dw16_rows(p)) rc = dw16_widen(p);
    if (rc != NEURON_NO_ERROR) {
        emu_conv16_free(p);
        return rc;
    }
    *out = p;
    return NEURON_NO_ERROR;
}

/* A depthwise's acc of output channel o (input channel o / multiplier) at the window whose
 * top-left tap is (y0, x0) of image b; a conv sums its taps in the tiles' GEMM below. */
static int64_t dw16_acc(const EmuConv16 *p, const int16_t *in, int32_t b, int32_t y0,
                        int32_t x0, int32_t o) {
    const EmuWindow *w = &p->win;
    int64_t acc = p->bias[o];
    for (int32_t i = 0; i < p->kh; i++) {
        const int32_t iy = y0 + i * w->dilation_h;
        if (iy < 0 || iy >= p->h) continue;
        for (int32_t j = 0; j < p->kw; j++) {
            const int32_t ix = x0 + j * w->dilation_w;
            if (ix < 0 || ix >= p->w) continue;
            const int16_t *px = in + (((size_t)b * p->h + iy) * p->w + ix) * p->ci;
            const int8_t tap = p->filter[((size_t)i * p->kw + j) * p->co + o];
            acc += (int64_t)tap * px[o / w->multiplier];
        }
    }
    return acc;
}

/* The requantized output of one sum (header formula). */
static int16_t conv16_out(const EmuConv16 *p, int64_t acc, int32_t o) {
    const int32_t t = p->total[o];
    const int64_t v = emu_wrap32((acc * p->m16[o] + (INT64_C(1) << (t - 1))) >> t);
    return (int16_t)emu_clamp(v, p->lo, p->hi);
}

static void dw16_eval(const EmuConv16 *p, const int16_t *in, int16_t *out) {
    const EmuWindow *w = &p->win;
    size_t k = 0;
    for (int32_t b = 0; b < p->n; b++)
        for (int32_t oy = 0; oy < p->oh; oy++)
            for (int32_t ox = 0; ox < p->ow; ox++)
                for (int32_t o = 0; o < p->co; o++) {
                    const int64_t acc = dw16_acc(p, in, b, oy * w->stride_h - w->pad_top,
                                                 ox * w->stride_w - w->pad_left, o);
                    out[k++] = conv16_out(p, acc, o);
                }
}

/* A thread's space: the int64 sums, the int32 block sums, the tile's im2col blocks, one row. */
typedef struct {
    int64_t *acc;
    int32_t *part;
    int16_t *cols, *row;
} Conv16Space;

static size_t conv16_padded(size_t bytes) { return (bytes + 63) / 64 * 64; }

static Conv16Space conv16_space(const EmuConv16 *p, uint8_t *scratch) {
    const size_t sums = (size_t)CONV16_TILE * p->co, kpad = (size_t)p->blocks * p->kb;
    Conv16Space s;
    s.acc = (int64_t *)scratch;
    s.part = (int32_t *)(scratch + conv16_padded(sums * sizeof(int64_t)));
    s.cols = (int16_t *)((uint8_t *)s.part + conv16_padded(sums * sizeof(int32_t)));
    s.row = s.cols + CONV16_TILE * kpad;
    return s;
}

size_t emu_conv16_scratch(const EmuConv16 *p) {
    if (dw16_rows(p)) /* a row's int32 sums, then its taps */
        return conv16_padded((size_t)p->ow * p->co * sizeof(int32_t)) +
               (size_t)2 * p->kh * p->kw * sizeof(int32_t);
    if (p->depthwise) return 0;
    const size_t sums = (size_t)CONV16_TILE * p->co, kpad = (size_t)p->blocks * p->kb;
    return conv16_padded(sums * sizeof(int64_t)) + conv16_padded(sums * sizeof(int32_t)) +
           (CONV16_TILE + 1) * kpad * sizeof(int16_t);
}

/* Output pixel q's taps as one row of blocks*CONV16_KB codes, then into the tile's blocks. */
static void conv16_im2col(const EmuConv16 *p, const int16_t *in, int64_t q, int32_t r,
                          const Conv16Space *s) {
    const EmuWindow *w = &p->win;
    const int32_t ox = (int32_t)(q % p->ow), oy = (int32_t)(q / p->ow % p->oh);
    const int32_t b = (int32_t)(q / ((int64_t)p->ow * p->oh));
    const int32_t y0 = oy * w->stride_h - w->pad_top, x0 = ox * w->stride_w - w->pad_left;
    memset(s->row, 0, (size_t)p->blocks * p->kb * sizeof *s->row);
    for (int32_t i = 0; i < p->kh; i++) {
        const int32_t iy = y0 + i * w->dilation_h;
        if (iy < 0 || iy >= p->h) continue;
        for (int32_t j = 0; j < p->kw; j++) {
            const int32_t ix = x0 + j * w->dilation_w;
            if (ix < 0 || ix >= p->w) continue;
            memcpy(s->row + ((size_t)i * p->kw + j) * p->ci,
                   in + (((size_t)b * p->h + iy) * p->w + ix) * p->ci, (size_t)p->ci * 2);
        }
    }
    for (int32_t k = 0; k < p->blocks; k++)
        memcpy(s->cols + ((size_t)k * CONV16_TILE + r) * p->kb, s->row + (size_t)k * p->kb,
               (size_t)p->kb * sizeof *s->row);
}

typedef struct {
    const EmuConv16 *p;
    const int16_t *in;
    int16_t *out;
    int64_t pixels;
} Conv16Job;

/* Tiles [begin, end) of CONV16_TILE output pixels. */
static void conv16_tiles(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const Conv16Job *j = ctx;
    const EmuConv16 *p = j->p;
    const Conv16Space s = conv16_space(p, scratch);
    for (int64_t tile = begin; tile < end; tile++) {
        const int64_t q0 = tile * CONV16_TILE;
        const int32_t rows = (int32_t)(j->pixels - q0 < CONV16_TILE ? j->pixels - q0 : CONV16_TILE);
        for (int32_t r = 0; r < rows; r++) conv16_im2col(p, j->in, q0 + r, r, &s);
        for (int32_t r = 0; r < rows; r++)
            for (int32_t o = 0; o < p->co; o++) s.acc[(size_t)r * p->co + o] = p->bias[o];
        for (int32_t k = 0; k < p->blocks; k++) {
            emu_gemm_s16(s.cols + (size_t)k * CONV16_TILE * p->kb,
                         p->wide + (size_t)k * p->co * p->kb, s.part, rows, p->co, p->kb);
            for (size_t e = 0; e < (size_t)rows * p->co; e++) s.acc[e] += s.part[e];
        }
        int16_t *dst = j->out + (size_t)q0 * p->co;
        for (int32_t r = 0; r < rows; r++)
            for (int32_t o = 0; o < p->co; o++)
                dst[(size_t)r * p->co + o] = conv16_out(p, s.acc[(size_t)r * p->co + o], o);
    }
}

/* Output rows [begin, end) of a row-summed depthwise (n * oh rows). */
static void dw16_row_task(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
    const Conv16Job *j = ctx;
    const EmuConv16 *p = j->p;
    int32_t *acc = (int32_t *)scratch;
    int32_t *taps = (int32_t *)(scratch + conv16_padded((size_t)p->ow * p->co * sizeof *acc));
    EmuDw16Row d = {NULL, p->wide, emu_dw_geom(&p->win, p->h, p->w, p->co, p->ow)};
    for (int64_t row = begin; row < end; row++) {
        const int32_t b = (int32_t)(row / p->oh), oy = (int32_t)(row % p->oh);
        d.image = j->in + (size_t)b * p->h * p->w * p->ci;
        if (p->isa == EMU_ISA_AVX2 || p->isa == EMU_ISA_AVX512)
            emu_dw16_row_avx2(&d, oy, acc, taps);
        else if (p->isa == EMU_ISA_NEON)
            emu_dw16_row_neon(&d, oy, acc, taps);
        else
            emu_dw16_row(&d, oy, acc, taps);
        int16_t *dst = j->out + (size_t)row * p->ow * p->co;
        for (size_t x = 0; x < (size_t)p->ow; x++)
            for (int32_t o = 0; o < p->co; o++)
                dst[x * p->co + o] = conv16_out(p, (int64_t)p->bias[o] + acc[x * p->co + o], o);
    }
}

void emu_conv16_eval(const EmuConv16 *p, const int16_t *in, int16_t *out, EmuScratch *scratch) {
    if (dw16_rows(p)) {
        const Conv16Job job = {p, in, out, (int64_t)p->n * p->oh * p->ow};
        const int64_t row_work = (int64_t)p->ow * p->co * p->kh * p->kw / 16;
        emu_parallel_for(scratch, (int64_t)p->n * p->oh, emu_par_grain(scratch, row_work),
                         dw16_row_task, &job);
        return;
    }
    if (p->depthwise) {
        dw16_eval(p, in, out);
        return;
    }
    const int64_t pixels = (int64_t)p->n * p->oh * p->ow;
    const Conv16Job job = {p, in, out, pixels};
    const int64_t tile_work = (int64_t)CONV16_TILE * p->co * p->depth / 16;
    emu_parallel_for(scratch, (pixels + CONV16_TILE - 1) / CONV16_TILE,
                     emu_par_grain(scratch, tile_work), conv16_tiles, &job);
}
