/*
 * model.c: NeuronModel_* (building a graph operand by operand); the operand helpers are in
 * operand.c.
 *
 * Order of calls, as the adapter enforces it: create -> addOperand/setOperandValue/
 * setOperandSymmPerChannelQuantParams/addOperation/identifyInputsAndOutputs (any order) ->
 * finish -> (getSupportedOperationsForDevices, compilations). Anything that edits a finished
 * model is NEURON_BAD_STATE (relaxComputationFloat32toFloat16, a compile setting, excepted:
 * model_ext.c). Values of at most 128 bytes are copied at once; larger ones are
 * kept by pointer and must stay unchanged until NeuronCompilation_finish returns (the
 * compilation snapshots them).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "mdla_ops.h"

void emu_model_release(NeuronModel *m) {
    if (m == NULL) return;
    for (uint32_t i = 0; i < m->n_opnds; i++) {
        free(m->opnds[i].channel_scales);
        free(m->opnds[i].owned);
    }
    for (uint32_t i = 0; i < m->n_ops; i++) {
        free(m->ops[i].in);
        free(m->ops[i].out);
    }
    free(m->opnds);
    free(m->ops);
    free(m->inputs);
    free(m->outputs);
    free(m->name);
    free(m->report_path);
    free(m);
}

static void *dup(const void *src, size_t n) {
    void *p = malloc(n ? n : 1);
    if (p != NULL && n) memcpy(p, src, n);
    return p;
}

NeuronModel *emu_model_clone(const NeuronModel *m) {
    NeuronModel *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    *c = *m;
    c->name = NULL; /* the snapshot computes; the debug name and report path stay the caller's */
    c->report_path = NULL;
    c->opnds = calloc(m->n_opnds ? m->n_opnds : 1, sizeof *c->opnds);
    c->ops = calloc(m->n_ops ? m->n_ops : 1, sizeof *c->ops);
    c->inputs = dup(m->inputs, m->n_inputs * sizeof *m->inputs);
    c->outputs = dup(m->outputs, m->n_outputs * sizeof *m->outputs);
    c->cap_opnds = m->n_opnds;
    c->cap_ops = m->n_ops;
    bool ok = c->opnds && c->ops && c->inputs && c->outputs;
    for (uint32_t i = 0; ok && i < m->n_opnds; i++) {
        EmuOperand *d = &c->opnds[i];
        *d = m->opnds[i];
        d->owned = NULL;
        d->channel_scales = NULL;
        if (m->opnds[i].channel_count) {
            d->channel_scales = dup(m->opnds[i].channel_scales, d->channel_count * sizeof(float));
            ok = d->channel_scales != NULL;
        }
        if (ok && d->has_value && !d->omitted) {
            d->owned = dup(m->opnds[i].value, d->value_len);
            d->value = d->owned;
            ok = d->owned != NULL;
        }
    }
    for (uint32_t i = 0; ok && i < m->n_ops; i++) {
        EmuOperation *d = &c->ops[i];
        *d = m->ops[i];
        d->in = dup(m->ops[i].in, d->n_in * sizeof(uint32_t));
        d->out = dup(m->ops[i].out, d->n_out * sizeof(uint32_t));
        ok = d->in && d->out;
        if (!ok) { /* keep the release below from freeing the source's arrays */
            if (d->in == NULL) d->n_in = 0;
            if (d->out == NULL) d->n_out = 0;
        }
    }
    if (!ok) {
        emu_model_release(c);
        return NULL;
    }
    return c;
}

/* ---- the API ------------------------------------------------------------------------------- */

/* The quantization an operand type allows, as NNAPI's validateOperandType checks it:
 * per-tensor quantized types need a finite scale > 0 and a zero point inside the type's range
 * (0 for the symmetric ones); per-channel weights carry their scales separately and a zero
 * point of 0; TENSOR_INT32 (a bias) a finite scale >= 0. NaN, +-inf, 0 and negative scales or
 * an out-of-range zero point are NEURON_BAD_DATA, never a kernel's problem. */
static bool quant_ok(int32_t t, float scale, int32_t zp) {
    const bool positive = scale > 0.0f && isfinite(scale);
    switch (t) {
    case NEURON_TENSOR_QUANT8_ASYMM:
        return positive && zp >= 0 && zp <= 255;
    case NEURON_TENSOR_QUANT8_ASYMM_SIGNED:
        return positive && zp >= -128 && zp <= 127;
    case NEURON_TENSOR_QUANT8_SYMM: case NEURON_TENSOR_QUANT16_SYMM:
        return positive && zp == 0;
    case NEURON_TENSOR_QUANT16_ASYMM:
        return positive && zp >= 0 && zp <= 65535;
    case NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return zp == 0 && scale >= 0.0f && isfinite(scale);
    case NEURON_TENSOR_INT32:
        return scale >= 0.0f && isfinite(scale);
    default:
        return true;
    }
}

int NeuronModel_create(NeuronModel **model) {
    EMU_TRACE();
    if (model == NULL) return NEURON_UNEXPECTED_NULL;
    *model = calloc(1, sizeof **model);
    return *model ? NEURON_NO_ERROR : NEURON_OUT_OF_MEMORY;
}

void NeuronModel_free(NeuronModel *model) {
    EMU_TRACE();
    emu_model_release(model);
}

int NeuronModel_addOperand(NeuronModel *model, const NeuronOperandType *type) {
    EMU_TRACE();
    if (model == NULL || type == NULL) return NEURON_UNEXPECTED_NULL;
    if (model->finished) return NEURON_BAD_STATE;
    /* NEURON_MODEL (a reference set by setOperandValueFromModel) and the compiled-network
     * extension type (raw bytes of any shape) have no element size */
    const bool special = type->type == NEURON_MODEL || emu_is_ext_type(type->type);
    if (emu_is_ext_type(type->type) && (type->type & 0xffff) != 0x0100 &&
        (type->type & 0xffff) != 0x0200) {
        emu_note(__func__, "extension operand type 0x%04x of %s is not supported by the emulator",
                 (unsigned)(type->type & 0xffff), EMU_EXT_COMPILED_NETWORK);
        return NEURON_BAD_DATA;
    }
    if (!special && emu_type_size(type->type) == 0) {
        if (type->type >= NEURON_EXT_TENSOR_UINT32 &&
            type->type <= NEURON_EXT_TENSOR_QUANT8_ASYMM_SIGNED_PER_CHANNEL)
            emu_note(__func__, "operand type %d (a Neuron extended type) is not supported by the "
                     "emulator: it has int8 per-tensor and symmetric per-channel kernels only",
                     (int)type->type);
        return NEURON_BAD_DATA;
    }
    const bool tensor = emu_is_tensor(type->type) && type->type != NEURON_MODEL;
    if (!tensor && type->dimensionCount != 0) return NEURON_BAD_DATA;
    if (type->dimensionCount > EMU_MAX_RANK) return NEURON_BAD_DATA;
    if (type->dimensionCount > 0 && type->dimensions == NULL) return NEURON_UNEXPECTED_NULL;
    uint64_t elements = 1;
    for (uint32_t i = 0; i < type->dimensionCount; i++) {
        /* dims of 0 (unknown) are not supported: every shape is static on the MDLA */
        if (type->dimensions[i] == 0 && !special) return NEURON_BAD_DATA;
        elements *= type->dimensions[i];
        if (elements > (UINT64_C(1) << 31)) return NEURON_BAD_DATA;
    }
    const int32_t t = type->type;
    if (!quant_ok(t, type->scale, type->zeroPoint)) return NEURON_BAD_DATA;
    if (model->n_opnds == model->cap_opnds) {
        uint32_t cap = model->cap_opnds ? 2 * model->cap_opnds : 16;
        EmuOperand *p = realloc(model->opnds, cap * sizeof *p);
        if (p == NULL) return NEURON_OUT_OF_MEMORY;
        model->opnds = p;
        model->cap_opnds = cap;
    }
    EmuOperand *o = &model->opnds[model->n_opnds++];
    memset(o, 0, sizeof *o);
    o->type = t;
    o->rank = type->dimensionCount;
    for (uint32_t i = 0; i < o->rank; i++) o->dims[i] = type->dimensions[i];
    o->scale = type->scale;
    o->zero_point = type->zeroPoint;
    return NEURON_NO_ERROR;
}

int NeuronModel_setOperandValue(NeuronModel *model, int32_t index, const void *buffer,
                                size_t length) {
    EMU_TRACE();
    if (model == NULL) return NEURON_UNEXPECTED_NULL;
    if (model->finished) return NEURON_BAD_STATE;
    if (index < 0 || (uint32_t)index >= model->n_opnds) return NEURON_BAD_DATA;
    EmuOperand *o = &model->opnds[index];
    if (buffer == NULL && length != 0) return NEURON_UNEXPECTED_NULL;
    if (o->type == NEURON_MODEL) return NEURON_BAD_DATA; /* setOperandValueFromModel's */
    free(o->owned);
    o->owned = NULL;
    o->value = NULL;
    o->has_value = false;
    o->omitted = false;
    if (buffer == NULL) { /* an omitted optional operand */
        o->has_value = true;
        o->omitted = true;
        o->value_len = 0;
        return NEURON_NO_ERROR;
    }
    if (length != emu_bytes(o) && !(emu_is_ext_type(o->type) && length > 0)) return NEURON_BAD_DATA;
    if (length <= EMU_IMMEDIATE_COPY_BYTES) {
        o->owned = malloc(length ? length : 1);
        if (o->owned == NULL) return NEURON_OUT_OF_MEMORY;
        memcpy(o->owned, buffer, length);
        o->value = o->owned;
    } else {
        o->value = buffer; /* by pointer, as the real adapter: valid until compilation finish */
    }
    o->value_len = length;
    o->has_value = true;
    return NEURON_NO_ERROR;
}

int NeuronModel_setOperandSymmPerChannelQuantParams(
    NeuronModel *model, int32_t index, const NeuronSymmPerChannelQuantParams *channelQuant) {
    EMU_TRACE();
    if (model == NULL || channelQuant == NULL) return NEURON_UNEXPECTED_NULL;
    if (model->finished) return NEURON_BAD_STATE;
    if (index < 0 || (uint32_t)index >= model->n_opnds) return NEURON_BAD_DATA;
    EmuOperand *o = &model->opnds[index];
    if (o->type != NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL) return NEURON_BAD_DATA;
    if (channelQuant->channelDim >= o->rank) return NEURON_BAD_DATA;
    if (channelQuant->scaleCount != o->dims[channelQuant->channelDim]) return NEURON_BAD_DATA;
    if (channelQuant->scales == NULL) return NEURON_UNEXPECTED_NULL;
    for (uint32_t i = 0; i < channelQuant->scaleCount; i++)
        if (!(channelQuant->scales[i] > 0.0f) || !isfinite(channelQuant->scales[i]))
            return NEURON_BAD_DATA;
    float *s = malloc(channelQuant->scaleCount * sizeof *s);
    if (s == NULL) return NEURON_OUT_OF_MEMORY;
    memcpy(s, channelQuant->scales, channelQuant->scaleCount * sizeof *s);
    free(o->channel_scales);
    o->channel_scales = s;
    o->channel_count = channelQuant->scaleCount;
    o->channel_dim = channelQuant->channelDim;
    return NEURON_NO_ERROR;
}

int NeuronModel_addOperation(NeuronModel *model, NeuronOperationType type, uint32_t inputCount,
                             const uint32_t *inputs, uint32_t outputCount,
                             const uint32_t *outputs) {
    emu_trace(__func__, "%d", (int)type);
    if (model == NULL) return NEURON_UNEXPECTED_NULL;
    if ((inputCount && inputs == NULL) || (outputCount && outputs == NULL))
        return NEURON_UNEXPECTED_NULL;
    if (model->finished) return NEURON_BAD_STATE;
    /* Neuron's codes, the OEM operation, LiteRT's placeholder NEURON_UNKNOWN (10001, used in its
     * getSupportedOperations query) and the compiled-network extension operation */
    const bool known = (type >= 0 && type <= NEURON_YUV420TOAFBC) ||
                       type == NEURON_OEM_OPERATION || type == EMU_OP_PLACEHOLDER ||
                       type == EMU_OP_COMPILED_NETWORK;
    if (!known) {
        if (emu_is_ext_type(type) || (type >> 16) > 0)
            emu_note(__func__, "extension operation type 0x%x is not supported by the emulator",
                     (unsigned)type);
        return NEURON_BAD_DATA;
    }
    if (inputCount == 0 || outputCount == 0 || inputCount > 4096 || outputCount > 64)
        return NEURON_BAD_DATA;
    for (uint32_t i = 0; i < inputCount; i++)
        if (inputs[i] >= model->n_opnds) return NEURON_BAD_DATA;
    for (uint32_t i = 0; i < outputCount; i++)
        if (outputs[i] >= model->n_opnds) return NEURON_BAD_DATA;
    EmuOperation op = {type, inputCount, outputCount, (uint32_t *)inputs, (uint32_t *)outputs};
    int rc = emu_check_signature(model, &op);
    if (rc != NEURON_NO_ERROR) return rc;
    if (model->n_ops == model->cap_ops) {
        uint32_t cap = model->cap_ops ? 2 * model->cap_ops : 16;
        EmuOperation *p = realloc(model->ops, cap * sizeof *p);
        if (p == NULL) return NEURON_OUT_OF_MEMORY;
        model->ops = p;
        model->cap_ops = cap;
    }
    op.in = dup(inputs, inputCount * sizeof *inputs);
    op.out = dup(outputs, outputCount * sizeof *outputs);
    if (op.in == NULL || op.out == NULL) {
        free(op.in);
        free(op.out);
        return NEURON_OUT_OF_MEMORY;
    }
    model->ops[model->n_ops++] = op;
    return NEURON_NO_ERROR;
}

int NeuronModel_identifyInputsAndOutputs(NeuronModel *model, uint32_t inputCount,
                                         const uint32_t *inputs, uint32_t outputCount,
                                         const uint32_t *outputs) {
    EMU_TRACE();
    if (model == NULL) return NEURON_UNEXPECTED_NULL;
    if ((inputCount && inputs == NULL) || (outputCount && outputs == NULL))
        return NEURON_UNEXPECTED_NULL;
    if (model->finished) return NEURON_BAD_STATE;
    if (outputCount == 0) return NEURON_BAD_DATA;
    for (uint32_t i = 0; i < inputCount; i++) {
        if (inputs[i] >= model->n_opnds || !emu_is_tensor(model->opnds[inputs[i]].type))
            return NEURON_BAD_DATA;
        for (uint32_t j = 0; j < outputCount; j++)
            if (inputs[i] == outputs[j]) return NEURON_BAD_DATA; /* both input and output */
        for (uint32_t j = 0; j < i; j++)
            if (inputs[i] == inputs[j]) return NEURON_BAD_DATA;
    }
    for (uint32_t i = 0; i < outputCount; i++) {
        if (outputs[i] >= model->n_opnds || !emu_is_tensor(model->opnds[outputs[i]].type))
            return NEURON_BAD_DATA;
        for (uint32_t j = 0; j < i; j++)
            if (outputs[i] == outputs[j]) return NEURON_BAD_DATA;
    }
    uint32_t *in = dup(inputs, inputCount * sizeof *inputs);
    uint32_t *out = dup(outputs, outputCount * sizeof *outputs);
    if (in == NULL || out == NULL) {
        free(in);
        free(out);
        return NEURON_OUT_OF_MEMORY;
    }
    free(model->inputs);
    free(model->outputs);
    model->inputs = in;
    model->outputs = out;
    model->n_inputs = inputCount;
    model->n_outputs = outputCount;
    model->io_identified = true;
    return NEURON_NO_ERROR;
}

/* Every operand is a constant, a model input, or written by exactly one earlier operation; every
 * operation validates (kernel prepare, when the emulator has the kernel). */
int NeuronModel_finish(NeuronModel *model) {
    EMU_TRACE();
    if (model == NULL) return NEURON_UNEXPECTED_NULL;
    if (model->finished) return NEURON_BAD_STATE;
    if (!model->io_identified || model->n_ops == 0) return NEURON_BAD_DATA;
    for (uint32_t i = 0; i < model->n_opnds; i++)
        model->opnds[i].lifetime = model->opnds[i].has_value ? EMU_CONST : EMU_TEMP;
    for (uint32_t i = 0; i < model->n_inputs; i++) {
        EmuOperand *o = &model->opnds[model->inputs[i]];
        if (o->has_value) return NEURON_BAD_DATA;
        o->lifetime = EMU_MODEL_INPUT;
    }
    for (uint32_t i = 0; i < model->n_outputs; i++) {
        EmuOperand *o = &model->opnds[model->outputs[i]];
        if (o->has_value) return NEURON_BAD_DATA;
        o->lifetime = EMU_MODEL_OUTPUT;
    }
    uint8_t *written = calloc(model->n_opnds ? model->n_opnds : 1, 1);
    if (written == NULL) return NEURON_OUT_OF_MEMORY;
    int rc = NEURON_NO_ERROR;
    for (uint32_t i = 0; i < model->n_inputs; i++) written[model->inputs[i]] = 1;
    for (uint32_t k = 0; k < model->n_ops && rc == NEURON_NO_ERROR; k++) {
        const EmuOperation *op = &model->ops[k];
        for (uint32_t i = 0; i < op->n_in && rc == NEURON_NO_ERROR; i++) {
            const EmuOperand *o = &model->opnds[op->in[i]];
            if (o->lifetime != EMU_CONST && !written[op->in[i]]) rc = NEURON_BAD_DATA;
        }
        for (uint32_t i = 0; i < op->n_out && rc == NEURON_NO_ERROR; i++) {
            const EmuOperand *o = &model->opnds[op->out[i]];
            if (o->lifetime == EMU_CONST || o->lifetime == EMU_MODEL_INPUT || written[op->out[i]])
                rc = NEURON_BAD_DATA;
            written[op->out[i]] = 1;
        }
        if (rc != NEURON_NO_ERROR) {
            emu_note(__func__, "operation %u (%s): an operand is read before any operation "
                     "writes it, or written twice", k, neuron_op_name(op->code));
            break;
        }
        /* a form the emulator does not compute stays: the support queries report it */
        rc = emu_op_validate(model, op);
        if (rc == EMU_UNSUPPORTED) rc = NEURON_NO_ERROR;
        if (rc != NEURON_NO_ERROR)
            emu_note(__func__, "operation %u (%s): its operands are not a valid form of the "
                     "operation, or their values or shapes disagree", k, neuron_op_name(op->code));
    }
    for (uint32_t i = 0; i < model->n_outputs && rc == NEURON_NO_ERROR; i++)
        if (!written[model->outputs[i]]) rc = NEURON_BAD_DATA;
    free(written);
    if (rc == NEURON_NO_ERROR) model->finished = true;
    return rc;
}

int NeuronModel_getSupportedOperationsForDevices(const NeuronModel *model,
                                                 const NeuronDevice *const *devices,
                                                 uint32_t numDevices, bool *supportedOps) {
    EMU_TRACE();
    if (model == NULL || devices == NULL || supportedOps == NULL) return NEURON_UNEXPECTED_NULL;
    if (!model->finished) return NEURON_BAD_STATE;
    if (numDevices == 0 || numDevices > EMU_MAX_DEVICES) return NEURON_BAD_DATA;
    const EmuTargetDevice *devs[EMU_MAX_DEVICES];
    for (uint32_t i = 0; i < numDevices; i++) {
        devs[i] = emu_device_spec(devices[i]);
        if (devs[i] == NULL) return NEURON_BAD_DATA;
    }
    /* Silicon fact 4: all-or-nothing. One op that maps on none of the devices makes every
     * entry false, as the adapter on the MT6886 reports (0/N). */
    const bool all = emu_model_mappable(model, devs, numDevices);
    for (uint32_t k = 0; k < model->n_ops; k++) supportedOps[k] = all;
    return NEURON_NO_ERROR;
}
