/*
 * validate.c: operand counts and types of each operation, in NNAPI order (reference section 4),
 * and the window geometry of convolutions and pools.
 *
 *   CONV_2D explicit   in, filter[O,KH,KW,I], bias[O], pad l r t b, stride w h, fuse [, NCHW
 *                      [, dilation w h]]                                      10 | 11 | 13
 *   CONV_2D implicit   in, filter, bias, padding code, stride w h, fuse [, NCHW [, dil w h]]
 *                                                                               7 | 8 | 10
 *   DEPTHWISE explicit in, filter[1,KH,KW,C*m], bias, pad l r t b, stride w h, multiplier, fuse
 *                      [, NCHW [, dilation w h]]                               11 | 12 | 14
 *   DEPTHWISE implicit in, filter, bias, code, stride w h, multiplier, fuse [, NCHW [, dil]]
 *                                                                               8 | 9 | 11
 *   pools explicit     in, pad l r t b, stride w h, filter w h, fuse [, NCHW]   10 | 11
 *   pools implicit     in, code, stride w h, filter w h, fuse [, NCHW]           7 | 8
 * The forms with the same count are told apart as NNAPI does: by whether the operand after the
 * fuse code of the implicit form is the BOOL layout flag.
 */
#include "emu.h"

static bool is_type(const NeuronModel *m, uint32_t idx, int32_t type) {
    return m->opnds[idx].type == type;
}

static bool all_type(const NeuronModel *m, const EmuOperation *op, uint32_t from, uint32_t to,
                     int32_t type) {
    for (uint32_t i = from; i < to && i < op->n_in; i++)
        if (!is_type(m, op->in[i], type)) return false;
    return true;
}

static bool act(const NeuronModel *m, uint32_t idx) { return emu_is_int8_act(m->opnds[idx].type); }

static bool weights(const NeuronModel *m, uint32_t idx) {
    const int32_t t = m->opnds[idx].type;
    return t == NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL || t == NEURON_TENSOR_QUANT8_SYMM ||
           t == NEURON_TENSOR_QUANT8_ASYMM_SIGNED;
}

/* Whether the window op uses the implicit (padding-code) form. */
static bool implicit_form(const NeuronModel *m, const EmuOperation *op, uint32_t n_implicit,
                          uint32_t layout_at) {
    if (op->n_in == n_implicit) return true;
    return op->n_in > layout_at && is_type(m, op->in[layout_at], NEURON_BOOL);
}

/* Tail of scalars: [first, first+n_i32) INT32, then an optional BOOL, then optional INT32s. */
static bool window_tail(const NeuronModel *m, const EmuOperation *op, uint32_t first,
                        uint32_t n_i32) {
    const uint32_t layout = first + n_i32;
    return all_type(m, op, first, layout, NEURON_INT32) &&
           (op->n_in <= layout || is_type(m, op->in[layout], NEURON_BOOL)) &&
           all_type(m, op, layout + 1, op->n_in, NEURON_INT32);
}

static int check_window(const NeuronModel *m, const EmuOperation *op) {
    const int32_t c = op->code;
    if (!act(m, op->in[0])) return NEURON_BAD_DATA;
    if (c == NEURON_CONV_2D || c == NEURON_DEPTHWISE_CONV_2D) {
        const bool dw = c == NEURON_DEPTHWISE_CONV_2D;
        const uint32_t n_imp = dw ? 8 : 7, n_exp = dw ? 11 : 10;
        const bool imp = implicit_form(m, op, n_imp, n_imp);
        const uint32_t base = imp ? n_imp : n_exp;
        if (!(op->n_in == base || op->n_in == base + 1 || op->n_in == base + 3))
            return NEURON_BAD_DATA;
        if (op->n_in < 3 || !weights(m, op->in[1]) || !is_type(m, op->in[2], NEURON_TENSOR_INT32))
            return NEURON_BAD_DATA;
        return window_tail(m, op, 3, base - 3) ? NEURON_NO_ERROR : NEURON_BAD_DATA;
    }
    /* pools */
    const bool imp = implicit_form(m, op, 7, 7);
    const uint32_t base = imp ? 7 : 10;
    if (!(op->n_in == base || op->n_in == base + 1)) return NEURON_BAD_DATA;
    return window_tail(m, op, 1, base - 1) ? NEURON_NO_ERROR : NEURON_BAD_DATA;
}

int emu_check_signature(const NeuronModel *m, const EmuOperation *op) {
    const uint32_t n = op->n_in;
    if (op->n_out != 1 && op->code != NEURON_SPLIT) {
        switch (op->code) {
        case NEURON_ADD: case NEURON_SUB: case NEURON_MUL: case NEURON_CONV_2D:
        case NEURON_DEPTHWISE_CONV_2D: case NEURON_AVERAGE_POOL_2D: case NEURON_MAX_POOL_2D:
        case NEURON_FULLY_CONNECTED: case NEURON_RELU: case NEURON_RELU1: case NEURON_RELU6:
        case NEURON_LOGISTIC: case NEURON_TANH: case NEURON_HARD_SWISH: case NEURON_SOFTMAX:
        case NEURON_CONCATENATION: case NEURON_PAD: case NEURON_RESHAPE: case NEURON_MEAN:
        case NEURON_RESIZE_BILINEAR: case NEURON_QUANTIZE: case NEURON_DEQUANTIZE:
            return NEURON_BAD_DATA;
        default:
            break;
        }
    }
    switch (op->code) {
    case NEURON_CONV_2D: case NEURON_DEPTHWISE_CONV_2D: case NEURON_AVERAGE_POOL_2D:
    case NEURON_MAX_POOL_2D:
        return check_window(m, op);
    case NEURON_ADD: case NEURON_SUB: case NEURON_MUL:
        return n == 3 && act(m, op->in[0]) && act(m, op->in[1]) &&
                       is_type(m, op->in[2], NEURON_INT32)
                   ? NEURON_NO_ERROR
                   : NEURON_BAD_DATA;
    case NEURON_FULLY_CONNECTED:
        return n == 4 && act(m, op->in[0]) && weights(m, op->in[1]) &&
                       is_type(m, op->in[2], NEURON_TENSOR_INT32) &&
                       is_type(m, op->in[3], NEURON_INT32)
                   ? NEURON_NO_ERROR
                   : NEURON_BAD_DATA;
    case NEURON_RELU: case NEURON_RELU1: case NEURON_RELU6: case NEURON_LOGISTIC:
    case NEURON_TANH: case NEURON_HARD_SWISH:
        return n == 1 && act(m, op->in[0]) && act(m, op->out[0]) ? NEURON_NO_ERROR
                                                                  : NEURON_BAD_DATA;
    case NEURON_SOFTMAX:
        return (n == 2 || n == 3) && act(m, op->in[0]) && is_type(m, op->in[1], NEURON_FLOAT32) &&
                       (n == 2 || is_type(m, op->in[2], NEURON_INT32))
                   ? NEURON_NO_ERROR
                   : NEURON_BAD_DATA;
    case NEURON_CONCATENATION:
        if (n < 2 || !is_type(m, op->in[n - 1], NEURON_INT32)) return NEURON_BAD_DATA;
        for (uint32_t i = 0; i + 1 < n; i++)
            if (!act(m, op->in[i])) return NEURON_BAD_DATA;
        return NEURON_NO_ERROR;
    case NEURON_PAD: case NEURON_RESHAPE: case NEURON_MEAN:
        if (n != (op->code == NEURON_MEAN ? 3u : 2u) || !act(m, op->in[0]) ||
            !is_type(m, op->in[1], NEURON_TENSOR_INT32))
            return NEURON_BAD_DATA;
        return op->code != NEURON_MEAN || is_type(m, op->in[2], NEURON_INT32) ? NEURON_NO_ERROR
                                                                              : NEURON_BAD_DATA;
    case NEURON_RESIZE_BILINEAR: {
        if (n < 3 || n > 6 || !act(m, op->in[0])) return NEURON_BAD_DATA;
        const bool ints = all_type(m, op, 1, 3, NEURON_INT32);
        const bool floats = all_type(m, op, 1, 3, NEURON_FLOAT32);
        return (ints || floats) && all_type(m, op, 3, n, NEURON_BOOL) ? NEURON_NO_ERROR
                                                                       : NEURON_BAD_DATA;
    }
    case NEURON_QUANTIZE: case NEURON_DEQUANTIZE:
        return n == 1 ? NEURON_NO_ERROR : NEURON_BAD_DATA;
    default:
        return NEURON_NO_ERROR; /* no int8 kernel: only the generic index checks apply */
    }
}

void emu_same_pads(int32_t n, int32_t k, int32_t s, int32_t d, int32_t *before, int32_t *after) {
    const int32_t out = (n + s - 1) / s;
    int32_t total = (out - 1) * s + d * (k - 1) + 1 - n;
    if (total < 0) total = 0;
    *before = total / 2;
    *after = total - total / 2;
}

int emu_out_size(int32_t n, int32_t k, int32_t s, int32_t d, int32_t before, int32_t after) {
    const int32_t span = (k - 1) * d + 1, padded = n + before + after;
    return padded < span ? 0 : (padded - span) / s + 1;
}

static int read_i32s(const NeuronModel *m, const EmuOperation *op, uint32_t from, uint32_t count,
                     int32_t *out) {
    for (uint32_t i = 0; i < count; i++) {
        if (emu_scalar_i32(m, op->in[from + i], &out[i]) != NEURON_NO_ERROR)
            return NEURON_BAD_DATA;
    }
    return NEURON_NO_ERROR;
}

int emu_window(const NeuronModel *m, const EmuOperation *op, EmuWindow *w) {
    const EmuOperand *x = &m->opnds[op->in[0]];
    const bool conv = op->code == NEURON_CONV_2D || op->code == NEURON_DEPTHWISE_CONV_2D;
    const bool dw = op->code == NEURON_DEPTHWISE_CONV_2D;
    const uint32_t first = conv ? 3 : 1;
    const uint32_t n_imp = dw ? 8 : 7, n_exp = dw ? 11 : 10;
    w->implicit = implicit_form(m, op, n_imp, n_imp);
    const uint32_t base = w->implicit ? n_imp : n_exp;
    int32_t v[10] = {0};
    if (read_i32s(m, op, first, base - first, v) != NEURON_NO_ERROR) return NEURON_BAD_DATA;
    bool nchw = false;
    if (op->n_in > base && emu_scalar_bool(m, op->in[base], &nchw) != NEURON_NO_ERROR)
        return NEURON_BAD_DATA;
    if (nchw) return NEURON_BAD_DATA; /* the emulator computes NHWC only */
    w->dilation_w = w->dilation_h = 1;
    if (conv && op->n_in == base + 3) {
        if (emu_scalar_i32(m, op->in[base + 1], &w->dilation_w) != NEURON_NO_ERROR ||
            emu_scalar_i32(m, op->in[base + 2], &w->dilation_h) != NEURON_NO_ERROR)
            return NEURON_BAD_DATA;
    }
    const int32_t *p = v;
    int32_t code = 0;
    if (w->implicit) {
        code = *p++;
    } else {
        w->pad_left = p[0];
        w->pad_right = p[1];
        w->pad_top = p[2];
        w->pad_bottom = p[3];
        p += 4;
    }
    w->stride_w = p[0];
    w->stride_h = p[1];
    p += 2;
    w->multiplier = 1;
    if (conv) {
        const EmuOperand *f = &m->opnds[op->in[1]];
        if (f->rank != 4 || x->rank != 4) return NEURON_BAD_DATA;
        w->filter_h = (int32_t)f->dims[1];
        w->filter_w = (int32_t)f->dims[2];
        if (dw) w->multiplier = *p++;
    } else {
        if (x->rank != 4) return NEURON_BAD_DATA;
        w->filter_w = p[0];
        w->filter_h = p[1];
        p += 2;
    }
    w->fuse = *p;
    if (w->stride_w < 1 || w->stride_h < 1 || w->dilation_w < 1 || w->dilation_h < 1 ||
        w->filter_w < 1 || w->filter_h < 1 || w->fuse < 0 || w->fuse > 3 || w->multiplier < 1)
        return NEURON_BAD_DATA;
    if (w->stride_w > 65535 || w->stride_h > 65535 || w->dilation_w > 65535 ||
        w->dilation_h > 65535 || w->filter_w > 65535 || w->filter_h > 65535)
        return NEURON_BAD_DATA;
    if (w->implicit) {
        if (code != NEURON_PADDING_SAME && code != NEURON_PADDING_VALID) return NEURON_BAD_DATA;
        w->pad_top = w->pad_bottom = w->pad_left = w->pad_right = 0;
        if (code == NEURON_PADDING_SAME) { /* silicon fact 6: TF-asymmetric, the extra pad after */
            emu_same_pads((int32_t)x->dims[1], w->filter_h, w->stride_h, w->dilation_h,
                          &w->pad_top, &w->pad_bottom);
            emu_same_pads((int32_t)x->dims[2], w->filter_w, w->stride_w, w->dilation_w,
                          &w->pad_left, &w->pad_right);
        }
    }
    if (w->pad_top < 0 || w->pad_bottom < 0 || w->pad_left < 0 || w->pad_right < 0 ||
        w->pad_top > 65535 || w->pad_bottom > 65535 || w->pad_left > 65535 ||
        w->pad_right > 65535)
        return NEURON_BAD_DATA;
    return NEURON_NO_ERROR;
}
