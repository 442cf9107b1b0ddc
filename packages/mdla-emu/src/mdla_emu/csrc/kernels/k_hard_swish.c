/*
 * HARD_SWISH, int8 in int16 fixed point (TFLite reference/hard_swish.h, HardSwishPrepare).
 *
 * Prepare (float32): hires = s_in / 128, reluish_scale = 3 / 32768,
 *     (Mo, eo) = QM(hires / s_out),  (Mr, er) = QM(hires / reluish_scale)   (eo <= 0 required)
 *     each narrowed to int16: M16 = M >= 2^31 - 1 - 2^15 ? 2^15 - 1 : (M + 2^15) >> 16
 * Eval, per int8 code (frozen into a 256-entry table):
 *     v   = (x - z_in) * 128
 *     pre = SRDHM16(v, Mo16)
 *     r   = v;  er > 0: r = SatShl16(r, er - 1);  r = SRDHM16(r, Mr16);  er > 0: r = SatShl16(r, 1)
 *           er < 0: r = RDBPOT(r, -er)
 *     r   = (r + 2^15) >> 1
 *     out = clamp(wrap16(RDBPOT(trunc(r * pre / 2^15), -eo) + z_out))
 * SRDHM16(a, b) = trunc((a*b + (a*b >= 0 ? 2^14 : 1 - 2^14)) / 2^15).
 */
#include "kernels.h"

#define I16_MIN (-32768)
#define I16_MAX 32767

static int64_t to_int16_multiplier(int64_t m) {
    return m >= EMU_INT32_MAX - 32768 ? I16_MAX : (m + 32768) >> 16;
}

static int64_t srdhm16(int64_t a, int64_t b) {
    if (a == I16_MIN && b == I16_MIN) return I16_MAX;
    const int64_t ab = a * b;
    return (ab + (ab >= 0 ? 16384 : 1 - 16384)) / 32768; /* C division truncates */
}

static int64_t sat_shl16(int64_t a, int amount) {
    const int64_t v = a * (INT64_C(1) << amount);
    return v < I16_MIN ? I16_MIN : (v > I16_MAX ? I16_MAX : v);
}

static int hs_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics num, void **out) {
    (void)num; /* HardSwishPrepare uses the default QuantizeMultiplier in both builds */
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    const float hires = (1.0f / 128.0f) * x->scale;
    int64_t mo, mr;
    int eo, er;
    EMU_CHECK(emu_quantize_multiplier((double)(hires / y->scale), EMU_ROUND_DOUBLE, &mo, &eo));
    EMU_CHECK(emu_quantize_multiplier((double)(hires / (3.0f / 32768.0f)), EMU_ROUND_DOUBLE, &mr,
                                      &er));
    EMU_CHECK(eo <= 0); /* TFLite requires s_in / 128 <= s_out */
    EmuLut *lut = NULL;
    int rc = emu_lut_alloc(m, op, &lut);
    if (rc != NEURON_NO_ERROR) return rc;
    const int64_t mo16 = to_int16_multiplier(mo), mr16 = to_int16_multiplier(mr);
    for (int q = -128; q < 128; q++) {
        const int64_t v = (int64_t)(q - x->zero_point) * 128; /* |v| <= 255 * 128 < 2^15 */
        const int64_t pre = srdhm16(v, mo16);
        int64_t r = v;
        if (er > 0) r = sat_shl16(r, er - 1);
        r = srdhm16(r, mr16);
        if (er > 0) r = sat_shl16(r, 1);
        if (er < 0) r = emu_rdbpot(r, -er);
        r = emu_asr(r + 32768, 1);
        int64_t o = emu_rdbpot((r * pre) / 32768, -eo);
        o = ((o + y->zero_point + 32768) % 65536 + 65536) % 65536 - 32768; /* int16 `+=` wraps */
        lut->table[q + 128] = (int8_t)emu_clamp(o, -128, 127);
    }
    *out = lut;
    return NEURON_NO_ERROR;
}

const EmuKernel emu_k_hard_swish = {NEURON_HARD_SWISH, "HARD_SWISH", hs_prepare, emu_lut_eval,
                                    NULL, free};
