/*
 * model_ext.c: the NeuronModel_* calls beyond building a graph: names and hints, per-channel
 * parameters with zero points, model references, extensions, the adapter's own support query.
 *
 * Extensions: the emulator implements one, com.mediatek.compiled_network (its own compiled
 * networks carried as an operand value: LiteRT's fallback load route and ExecuTorch's only one).
 * Any other extension name, and vendor operation extensions, need MediaTek's library: the call
 * fails with NEURON_BAD_DATA and one line on stderr saying so.
 */
#include <stdlib.h>
#include <string.h>

#include "compilation.h"

static char *dup_string(const char *s) {
    const size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL) memcpy(p, s, n);
    return p;
}

static int set_flag(NeuronModel *model, bool *flag, bool value) {
    if (model == NULL) return NEURON_UNEXPECTED_NULL;
    if (model->finished) return NEURON_BAD_STATE;
    *flag = value;
    return NEURON_NO_ERROR;
}

/* The emulator computes int8 only: the flag is kept and changes nothing. It is a compile
 * setting, so a finished model takes it too: LiteRT's plugin sets it after NeuronModel_finish. */
int NeuronModel_relaxComputationFloat32toFloat16(NeuronModel *model, bool allow) {
    emu_trace(__func__, "%d", (int)allow);
    if (model == NULL) return NEURON_UNEXPECTED_NULL;
    model->relax_fp16 = allow;
    return NEURON_NO_ERROR;
}

/* The emulator's I/O layout is the model's own (no padding, no conversion), so suppressing the
 * conversion leaves the padded sizes and dimensions equal to the operands'. */
int NeuronModel_suppressInputConversion(NeuronModel *model, bool suppress) {
    emu_trace(__func__, "%d", (int)suppress);
    return set_flag(model, model ? &model->suppress_in : NULL, suppress);
}

int NeuronModel_suppressOutputConversion(NeuronModel *model, bool suppress) {
    emu_trace(__func__, "%d", (int)suppress);
    return set_flag(model, model ? &model->suppress_out : NULL, suppress);
}

int NeuronModel_setName(NeuronModel *model, const char *name) {
    EMU_TRACE();
    if (model == NULL || name == NULL) return NEURON_UNEXPECTED_NULL;
    char *copy = dup_string(name);
    if (copy == NULL) return NEURON_OUT_OF_MEMORY;
    free(model->name);
    model->name = copy;
    return NEURON_NO_ERROR;
}

int NeuronDebug_setReportPath(NeuronModel *model, const char *path) {
    EMU_TRACE();
    if (model == NULL || path == NULL) return NEURON_UNEXPECTED_NULL;
    if (*path == '\0') return NEURON_BAD_DATA;
    char *copy = dup_string(path);
    if (copy == NULL) return NEURON_OUT_OF_MEMORY;
    free(model->report_path);
    model->report_path = copy;
    return NEURON_NO_ERROR;
}

/* TENSOR_QUANT8_SYMM_PER_CHANNEL with zero points: every zero point must be 0 (symmetric), and
 * then it is setOperandSymmPerChannelQuantParams. The asymmetric per-channel types (9002, 9008)
 * are refused at addOperand: the emulator has no kernel for them. */
int NeuronModel_setOperandPerChannelQuantParams(NeuronModel *model, int32_t index,
                                                const NeuronPerChannelQuantParams *channelQuant) {
    EMU_TRACE();
    if (model == NULL || channelQuant == NULL) return NEURON_UNEXPECTED_NULL;
    if (channelQuant->zeroPointCount != 0) {
        if (channelQuant->zeroPoints == NULL) return NEURON_UNEXPECTED_NULL;
        if (channelQuant->zeroPointCount != channelQuant->scaleCount) return NEURON_BAD_DATA;
        for (uint32_t i = 0; i < channelQuant->zeroPointCount; i++)
            if (channelQuant->zeroPoints[i] != 0) return NEURON_BAD_DATA;
    }
    const NeuronSymmPerChannelQuantParams symm = {channelQuant->channelDim,
                                                  channelQuant->scaleCount, channelQuant->scales};
    emu_trace_silence(+1);
    const int rc = NeuronModel_setOperandSymmPerChannelQuantParams(model, index, &symm);
    emu_trace_silence(-1);
    return rc;
}

/* A NEURON_MODEL operand refers to a finished model (IF/WHILE bodies). The emulator has no
 * IF/WHILE kernel, so such a model builds but maps on no device. */
int NeuronModel_setOperandValueFromModel(NeuronModel *model, int32_t index,
                                         const NeuronModel *value) {
    EMU_TRACE();
    if (model == NULL || value == NULL) return NEURON_UNEXPECTED_NULL;
    if (model->finished || !value->finished) return NEURON_BAD_STATE;
    if (index < 0 || (uint32_t)index >= model->n_opnds) return NEURON_BAD_DATA;
    EmuOperand *o = &model->opnds[index];
    if (o->type != NEURON_MODEL) return NEURON_BAD_DATA;
    free(o->owned);
    o->owned = NULL;
    o->value = value;
    o->value_len = 0;
    o->has_value = true;
    o->omitted = false;
    return NEURON_NO_ERROR;
}

static int extension_type(const char *fn, NeuronModel *model, const char *extensionName,
                          uint16_t code, int32_t *type) {
    if (model == NULL || extensionName == NULL || type == NULL) return NEURON_UNEXPECTED_NULL;
    if (strcmp(extensionName, EMU_EXT_COMPILED_NETWORK) != 0) {
        emu_note(fn, "extension `%s` is not supported by the emulator (only %s, for its own "
                 "compiled networks)", extensionName, EMU_EXT_COMPILED_NETWORK);
        return NEURON_BAD_DATA;
    }
    *type = (EMU_EXT_PREFIX << 16) | code;
    return NEURON_NO_ERROR;
}

int NeuronModel_getExtensionOperandType(NeuronModel *model, const char *extensionName,
                                        uint16_t operandCodeWithinExtension, int32_t *type) {
    emu_trace(__func__, "%s 0x%04x", extensionName ? extensionName : "(null)",
              (unsigned)operandCodeWithinExtension);
    return extension_type(__func__, model, extensionName, operandCodeWithinExtension, type);
}

int NeuronModel_getExtensionOperationType(NeuronModel *model, const char *extensionName,
                                          uint16_t operationCodeWithinExtension, int32_t *type) {
    emu_trace(__func__, "%s 0x%04x", extensionName ? extensionName : "(null)",
              (unsigned)operationCodeWithinExtension);
    return extension_type(__func__, model, extensionName, operationCodeWithinExtension, type);
}

/* The compiled-network operand's data is its value: the bytes of the network. */
int NeuronModel_setOperandExtensionData(NeuronModel *model, int32_t index, const void *data,
                                        size_t length) {
    EMU_TRACE();
    if (model == NULL || data == NULL) return NEURON_UNEXPECTED_NULL;
    if (index < 0 || (uint32_t)index >= model->n_opnds) return NEURON_BAD_DATA;
    if (!emu_is_ext_type(model->opnds[index].type)) return NEURON_BAD_DATA;
    emu_trace_silence(+1);
    const int rc = NeuronModel_setOperandValue(model, index, data, length);
    emu_trace_silence(-1);
    return rc;
}

int NeuronModel_addOperationExtension(NeuronModel *model, const char *name, const char *vendor,
                                      const NeuronDevice *device, uint32_t inputCount,
                                      const uint32_t *inputs, uint32_t outputCount,
                                      const uint32_t *outputs) {
    EMU_TRACE();
    if (model == NULL || name == NULL || vendor == NULL || device == NULL)
        return NEURON_UNEXPECTED_NULL;
    if ((inputCount && inputs == NULL) || (outputCount && outputs == NULL))
        return NEURON_UNEXPECTED_NULL;
    if (model->finished) return NEURON_BAD_STATE;
    if (emu_device_spec(device) == NULL) return NEURON_BAD_DATA;
    emu_note(__func__, "operation extension %s of vendor %s is not supported by the emulator "
             "(its implementation lives in the vendor's device library)", name, vendor);
    return NEURON_BAD_DATA;
}

/* The adapter picks the devices of NeuronCompilation_create, so this asks what that call would
 * accept: every operation true when one device maps the whole model, else every one false (the
 * all-or-nothing answer of silicon fact 4). */
int NeuronModel_getSupportedOperations(NeuronModel *model, bool *supported,
                                       uint32_t operationCount) {
    EMU_TRACE();
    if (model == NULL || supported == NULL) return NEURON_UNEXPECTED_NULL;
    if (!model->finished) return NEURON_BAD_STATE;
    if (operationCount < model->n_ops) return NEURON_BAD_DATA;
    NeuronCompilation probe = {0};
    const bool all = emu_choose_device(&probe, model) == NEURON_NO_ERROR;
    for (uint32_t k = 0; k < model->n_ops; k++) supported[k] = all;
    return NEURON_NO_ERROR;
}
