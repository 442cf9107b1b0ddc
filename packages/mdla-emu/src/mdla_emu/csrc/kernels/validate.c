/*
 * validate.c: operand counts and types of each operation, read from the operand forms that
 * mdla_ops.h holds (generated from mdla_ir/schema.py, NNAPI order, reference section 4) through
 * signature.h, and the window geometry of convolutions and pools.
 *
 * The forms of one op are told apart by type, as NNAPI does: CONV_2D explicit
 * `awtiiiiiii[B[ii]]` and implicit `awtiiii[B[ii]]` differ in whether the operand after the
 * implicit form's fuse code is the BOOL layout flag.
 */
#include "emu.h"
#include "signature.h"

static bool is_type(const NeuronModel *m, uint32_t idx, int32_t type) {
    return m->opnds[idx].type == type;
}

/* Whether the window op uses the implicit (padding-code) form. */
static bool implicit_form(const NeuronModel *m, const EmuOperation *op, uint32_t n_implicit,
                          uint32_t layout_at) {
    if (op->n_in == n_implicit) return true;
    return op->n_in > layout_at && is_type(m, op->in[layout_at], NEURON_BOOL);
}

/* The operands an operation names, for the signature matcher. */
typedef struct {
    const NeuronModel *m;
    const uint32_t *idx;
} OperandList;

static int32_t operand_type(const void *ctx, uint32_t i) {
    const OperandList *l = ctx;
    return l->m->opnds[l->idx[i]].type;
}

int emu_check_signature(const NeuronModel *m, const EmuOperation *op) {
    const mdla_op_signature *sig = mdla_op_signature_of(op->code);
    if (sig == NULL || !sig->emu)
        return NEURON_NO_ERROR; /* no int8 kernel: only the generic index checks apply */
    const OperandList in = {m, op->in}, out = {m, op->out};
    return mdla_sig_ok(op->code, op->n_in, operand_type, &in, op->n_out, operand_type, &out)
               ? NEURON_NO_ERROR
               : NEURON_BAD_DATA;
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
    if (nchw) return EMU_UNSUPPORTED; /* the emulator computes NHWC only */
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
