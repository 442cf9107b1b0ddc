/*
 * LOGISTIC and TANH.
 * int8: a 256-entry table built in float32 (TFLite LUTPopulate).
 *     x = (float)s_in * (float)(q - z_in)
 *     t = 1 / (1 + expf(-x))   (LOGISTIC)   or   tanhf(x)   (TANH)
 *     table[q] = clamp((int)roundf(t * (1.0f / s_out)) + z_out)        q in [-128, 127]
 * Output parameters are fixed by the int8 spec: LOGISTIC (1/256, -128), TANH (1/128, 0).
 * Built with -ffp-contract=off so no step is fused into an FMA (bit-exact to LiteRT's table).
 *
 * int16 (TENSOR_QUANT16_SYMM in and out, output scale 1/32768): LiteRT's reference int16
 * kernels (mdla_quant.kernels.a16_act has the formulas). The input is rescaled to units of
 * 1/(3 * 4096) by an int multiplier and rounding right shift from prepare, then the 256-entry
 * table of sigmoid(i / 24) in 0.16 fixed point is read at |v| with linear interpolation
 * (LOGISTIC: 9 fraction bits; TANH = 2 sigmoid(2x) - 1: 8 fraction bits).
 */
#include "kernels.h"

static const uint16_t sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
};

typedef struct {
    EmuLut *lut; /* int8: the table; NULL at 16 bits */
    uint64_t count;
    int32_t multiplier, shift;
    bool logistic;
} ActParams;

/* TFLite CheckedLog2 in float32: round(log2 x) half away from zero, exact within 1e-3 */
static bool checked_log2(float x, int *out) {
    const float l = logf(x) * (1.0f / logf(2.0f));
    const float r = roundf(l);
    *out = (int)r;
    return fabsf(l - r) < 1e-3f;
}

static void input_rescale(float scale, bool logistic, ActParams *p) {
    int l2 = 0;
    const bool pot = checked_log2(scale, &l2);
    const int shift = 12 + l2;
    if (pot && (shift == 0 || (!logistic && shift == 1))) {
        p->multiplier = 3 << shift;
        p->shift = 0;
        return;
    }
    double m = (double)scale * 4096.0 * 3.0;
    p->shift = 0;
    while (m <= 32767.0 / 2.0 && p->shift <= 30) {
        p->shift++;
        m *= 2.0;
    }
    p->multiplier = (int32_t)m;
}

static int16_t sigmoid16(int32_t v) {
    const uint32_t a = (uint32_t)(v < 0 ? -v : v), h = a >> 9;
    uint32_t r = 0x7FFFu << 10;
    if (h < 255) {
        const uint32_t lo = sigmoid_table[h], hi = sigmoid_table[h + 1];
        r = (lo << 9) + (a & 0x1FFu) * (hi - lo);
    }
    r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1;
    return (int16_t)(r >> 10);
}

static int16_t tanh16(int32_t v) {
    const uint32_t a = (uint32_t)(v < 0 ? -v : v), h = a >> 8;
    int32_t r = (int32_t)(0xFFFFu << 8);
    if (h < 255) {
        const uint32_t lo = sigmoid_table[h], hi = sigmoid_table[h + 1];
        r = (int32_t)((lo << 8) + (a & 0xFFu) * (hi - lo));
    }
    r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
    return (int16_t)(r >> 8); /* arithmetic shift, as the reference's int32 */
}

static int act16_prepare(const NeuronModel *m, const EmuOperation *op, bool logistic,
                         ActParams *p) {
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    EMU_CHECK(x->type == NEURON_TENSOR_QUANT16_SYMM && y->type == NEURON_TENSOR_QUANT16_SYMM);
    EMU_CHECK(x->zero_point == 0 && y->zero_point == 0 && y->scale == 1.0f / 32768.0f);
    EMU_CHECK(emu_dims_are(y, x->rank, x->dims));
    p->count = emu_elements(x);
    p->logistic = logistic;
    input_rescale(x->scale, logistic, p);
    return NEURON_NO_ERROR;
}

static int lut_prepare(const NeuronModel *m, const EmuOperation *op, bool logistic, EmuLut **out) {
    *out = NULL;
    const EmuOperand *x = &m->opnds[op->in[0]], *y = &m->opnds[op->out[0]];
    if (logistic) {
        EMU_CHECK(y->scale == 1.0f / 256.0f && y->zero_point == -128);
    } else {
        EMU_CHECK(y->scale == 1.0f / 128.0f && y->zero_point == 0);
    }
    EmuLut *lut = NULL;
    int rc = emu_lut_alloc(m, op, &lut);
    if (rc != NEURON_NO_ERROR) return rc;
    emu_act_table(x, y, logistic, lut->table);
    *out = lut;
    return NEURON_NO_ERROR;
}

void emu_act_table(const EmuOperand *x, const EmuOperand *y, bool logistic, int8_t *table) {
    const float inv = 1.0f / y->scale;
    for (int q = -128; q < 128; q++) {
        const float v = x->scale * (float)(q - x->zero_point);
        const float t = logistic ? 1.0f / (1.0f + expf(-v)) : tanhf(v);
        const float r = emu_round_awayf(t * inv);
        table[q + 128] = (int8_t)emu_clamp((int64_t)r + y->zero_point, -128, 127);
    }
}

static int act_prepare(const NeuronModel *m, const EmuOperation *op, bool logistic, void **out) {
    *out = NULL;
    ActParams *p = calloc(1, sizeof *p);
    if (p == NULL) return NEURON_OUT_OF_MEMORY;
    const bool wide = m->opnds[op->in[0]].type == NEURON_TENSOR_QUANT16_SYMM;
    const int rc = wide ? act16_prepare(m, op, logistic, p) : lut_prepare(m, op, logistic, &p->lut);
    if (rc != NEURON_NO_ERROR) {
        free(p);
        return rc;
    }
    *out = p;
    return NEURON_NO_ERROR;
}

static int logistic_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics r, void **out) {
    (void)r;
    return act_prepare(m, op, true, out);
}
static int tanh_prepare(const NeuronModel *m, const EmuOperation *op, EmuNumerics r, void **out) {
    (void)r;
    return act_prepare(m, op, false, out);
}

static void act_eval(const void *params, const void *const *inputs, void *output,
                     EmuScratch *scratch) {
    const ActParams *p = params;
    if (p->lut != NULL) {
        emu_lut_eval(p->lut, inputs, output, scratch);
        return;
    }
    const int16_t *x = inputs[0];
    int16_t *y = output;
    const int32_t round = p->shift > 0 ? 1 << (p->shift - 1) : 0;
    for (uint64_t i = 0; i < p->count; i++) {
        const int32_t v = (x[i] * p->multiplier + round) >> p->shift;
        y[i] = p->logistic ? sigmoid16(v) : tanh16(v);
    }
}

static void act_release(void *params) {
    ActParams *p = params;
    if (p != NULL) free(p->lut);
    free(p);
}

const EmuKernel emu_k_logistic = {NEURON_LOGISTIC, "LOGISTIC", logistic_prepare, act_eval, NULL,
                                  act_release};
const EmuKernel emu_k_tanh = {NEURON_TANH, "TANH", tanh_prepare, act_eval, NULL, act_release};
