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
 * input channel o / multiplier. One plain loop per output element (no fast path).
 */
#include <string.h>

#include "kernels.h"

struct EmuConv16 {
    int32_t n, h, w, ci, oh, ow, co, kh, kw;
    bool depthwise;
    EmuWindow win;
    const int8_t *filter; /* the constant operand's data */
    int64_t *m16;
    int32_t *total, *bias;
    int32_t lo, hi;
};

void emu_conv16_free(EmuConv16 *p) {
    if (p == NULL) return;
    free(p->m16);
    free(p->total);
    free(p->bias);
    free(p);
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
                     depthwise, win, f->value, NULL, NULL, NULL, 0, 0};
    p->m16 = malloc((size_t)co * sizeof *p->m16);
    p->total = malloc((size_t)co * sizeof *p->total);
    p->bias = calloc(co, sizeof *p->bias);
    if (p->m16 == NULL || p->total == NULL || p->bias == NULL) {
        emu_conv16_free(p);
        return NEURON_OUT_OF_MEMORY;
    }
    const int rc = conv16_quant(m, op, p);
    if (rc != NEURON_NO_ERROR) {
        emu_conv16_free(p);
        return rc;
    }
    *out = p;
    return NEURON_NO_ERROR;
}

/* acc of output channel o at the window whose top-left tap is (y0, x0) of image b. */
static int64_t conv16_acc(const EmuConv16 *p, const int16_t *in, int32_t b, int32_t y0,
                          int32_t x0, int32_t o) {
    const EmuWindow *w = &p->win;
    const int32_t mult = p->depthwise ? w->multiplier : 1;
    int64_t acc = p->bias[o];
    for (int32_t i = 0; i < p->kh; i++) {
        const int32_t iy = y0 + i * w->dilation_h;
        if (iy < 0 || iy >= p->h) continue;
        for (int32_t j = 0; j < p->kw; j++) {
            const int32_t ix = x0 + j * w->dilation_w;
            if (ix < 0 || ix >= p->w) continue;
            const int16_t *px = in + (((size_t)b * p->h + iy) * p->w + ix) * p->ci;
            if (p->depthwise) {
                acc += (int64_t)p->filter[((size_t)i * p->kw + j) * p->co + o] * px[o / mult];
                continue;
            }
            const int8_t *wo = p->filter + (((size_t)o * p->kh + i) * p->kw + j) * p->ci;
            for (int32_t c = 0; c < p->ci; c++) acc += (int64_t)wo[c] * px[c];
        }
    }
    return acc;
}

void emu_conv16_eval(const EmuConv16 *p, const int16_t *in, int16_t *out) {
    const EmuWindow *w = &p->win;
    size_t k = 0;
    for (int32_t b = 0; b < p->n; b++)
        for (int32_t oy = 0; oy < p->oh; oy++)
            for (int32_t ox = 0; ox < p->ow; ox++)
                for (int32_t o = 0; o < p->co; o++) {
                    const int64_t acc = conv16_acc(p, in, b, oy * w->stride_h - w->pad_top,
                                                   ox * w->stride_w - w->pad_left, o);
                    const int32_t t = p->total[o];
                    const int64_t v =
                        emu_wrap32((acc * p->m16[o] + (INT64_C(1) << (t - 1))) >> t);
                    out[k++] = (int16_t)emu_clamp(v, p->lo, p->hi);
                }
}
