/*
 * device.c: Neuron_getVersion, device enumeration, and whether an operation maps on a device.
 *
 * The op table of each device is generated (emu_targets.c) from the target data file that
 * mdla_target holds (targets/mdla3.5.toml): one source of truth. An op maps on a device
 * when the table lists its form as supported (`supported` for int8 activations, `int16` for an
 * operation with an int16 activation, whose 16x8 kernel the emulator has), the emulator has a
 * kernel for it, and it meets the entry's constraints:
 *   dtypes             int8 activations need "int8" among the entry's dtypes
 *   max_rank, max_dim  every activation operand within the device's limits
 *   per_channel        per-channel weights only where the entry says so (silicon fact 3)
 *   padding            "same-valid": explicit pads must be VALID or the TF-SAME pads (fact 6)
 *   broadcast          binary operands of unequal shapes only where the entry says so
 *   shared_scale       all inputs and the output share one scale and zero point (fact 7)
 *   keeps_input_scale  output scale and zero point equal the input's
 *   fixed_output       the output's scale and zero point are fixed (LOGISTIC, SOFTMAX, ...)
 */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compilation.h"
#include "mdla_ops.h"

static NeuronDevice devices[EMU_MAX_DEVICES];

static uint32_t device_count(void) {
    return emu_target_device_count < EMU_MAX_DEVICES ? emu_target_device_count : EMU_MAX_DEVICES;
}

/* 8.2.24: the first version LiteRT's MediaTek plugin asks NeuronCompilation_getSupportedOperations
 * (with its placeholder operation) instead of partitioning from its own op list. */
int Neuron_getVersion(NeuronRuntimeVersion *version) {
    EMU_TRACE();
    if (version == NULL) return NEURON_UNEXPECTED_NULL;
    version->major = 8;
    version->minor = 2;
    version->patch = 24;
    return NEURON_NO_ERROR;
}

int Neuron_getDeviceCount(uint32_t *numDevices) {
    EMU_TRACE();
    if (numDevices == NULL) return NEURON_UNEXPECTED_NULL;
    *numDevices = device_count();
    return NEURON_NO_ERROR;
}

int Neuron_getDevice(uint32_t devIndex, NeuronDevice **device) {
    EMU_TRACE();
    if (device == NULL) return NEURON_UNEXPECTED_NULL;
    if (devIndex >= device_count()) return NEURON_BAD_DATA;
    devices[devIndex].index = devIndex; /* the handle of an index is stable */
    devices[devIndex].spec = &emu_target_devices[devIndex];
    *device = &devices[devIndex];
    return NEURON_NO_ERROR;
}

int NeuronDevice_getName(const NeuronDevice *device, const char **name) {
    EMU_TRACE();
    if (device == NULL || name == NULL) return NEURON_UNEXPECTED_NULL;
    const EmuTargetDevice *d = emu_device_spec(device);
    if (d == NULL) return NEURON_BAD_DATA;
    *name = d->name;
    return NEURON_NO_ERROR;
}

const EmuTargetDevice *emu_device_spec(const NeuronDevice *d) {
    for (uint32_t i = 0; i < device_count(); i++)
        if (d == &devices[i]) return &emu_target_devices[i];
    return NULL;
}

bool emu_device_is_apu(const EmuTargetDevice *d) {
    /* mtk-mdla and mtk-dsp (the VPU) live in the APU power domain; the GPU does not */
    const char *n = d->name;
    return n[0] == 'm' && n[1] == 't' && n[2] == 'k' && n[3] == '-' &&
           ((n[4] == 'm' && n[5] == 'd' && n[6] == 'l' && n[7] == 'a') ||
            (n[4] == 'd' && n[5] == 's' && n[6] == 'p'));
}

static const EmuTargetOp *entry(const EmuTargetDevice *d, int32_t code) {
    for (uint32_t i = 0; i < d->n_ops; i++)
        if (d->ops[i].code == code) return &d->ops[i];
    return NULL;
}

static bool within_limits(const EmuTargetDevice *d, const EmuTargetOp *e, const EmuOperand *o) {
    if (o->rank > d->max_rank) return false;
    for (uint32_t i = 0; i < o->rank; i++)
        if (o->dims[i] > d->max_dim) return false;
    return emu_is_int8_act(o->type) ? (e->dtypes & EMU_DT_INT8) != 0 : true;
}

static bool same_shape(const EmuOperand *a, const EmuOperand *b) {
    if (a->rank != b->rank) return false;
    for (uint32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static bool padding_ok(const NeuronModel *m, const EmuOperation *op, int mode) {
    if (mode != EMU_PAD_SAME_VALID) return true;
    EmuWindow w;
    if (emu_window(m, op, &w) != NEURON_NO_ERROR) return false;
    if (w.implicit) return true; /* the padding codes are VALID or TF-SAME by construction */
    if (!(w.pad_top | w.pad_bottom | w.pad_left | w.pad_right)) return true; /* VALID */
    const EmuOperand *x = &m->opnds[op->in[0]];
    int32_t t, b, l, r;
    emu_same_pads((int32_t)x->dims[1], w.filter_h, w.stride_h, w.dilation_h, &t, &b);
    emu_same_pads((int32_t)x->dims[2], w.filter_w, w.stride_w, w.dilation_w, &l, &r);
    return w.pad_top == t && w.pad_bottom == b && w.pad_left == l && w.pad_right == r;
}

/* The ops with a 16x8 kernel (int16 activations, TENSOR_QUANT16_SYMM: QuantConfig.a16). */
static bool has_16x8(int32_t code) {
    switch (code) {
    case NEURON_QUANTIZE: case NEURON_RESHAPE: case NEURON_ADD: case NEURON_SUB:
    case NEURON_CONV_2D: case NEURON_DEPTHWISE_CONV_2D: case NEURON_FULLY_CONNECTED:
    case NEURON_CONCATENATION: case NEURON_MUL: case NEURON_MEAN: case NEURON_AVERAGE_POOL_2D:
    case NEURON_MAX_POOL_2D: case NEURON_PAD: case NEURON_TRANSPOSE:
    case NEURON_RESIZE_NEAREST_NEIGHBOR: case NEURON_LOGISTIC: case NEURON_TANH:
    case NEURON_SOFTMAX: case NEURON_RESIZE_BILINEAR: case NEURON_PRELU:
        return true;
    default:
        return false;
    }
}

/* An int16 activation among the operation's operands (its 16x8 form). */
static bool wide_form(const NeuronModel *m, const EmuOperation *op) {
    for (uint32_t i = 0; i < op->n_in; i++)
        if (m->opnds[op->in[i]].type == NEURON_TENSOR_QUANT16_SYMM) return true;
    for (uint32_t i = 0; i < op->n_out; i++)
        if (m->opnds[op->out[i]].type == NEURON_TENSOR_QUANT16_SYMM) return true;
    return false;
}

/* An int16 activation among the operands of an operation the emulator has no 16x8 kernel for:
 * the ABI form is valid, but the int8 kernel would misread its bytes. */
static bool has_int16(const NeuronModel *m, const EmuOperation *op) {
    return !has_16x8(op->code) && wide_form(m, op);
}

int emu_op_validate(const NeuronModel *m, const EmuOperation *op) {
    const EmuKernel *kern = emu_kernel(op->code);
    if (kern == NULL) return NEURON_NO_ERROR;
    if (has_int16(m, op)) return EMU_UNSUPPORTED;
    void *params = NULL; /* validation only: any arithmetic accepts the same operands */
    const EmuNumerics num = {EMU_ROUND_DOUBLE, false};
    const int rc = kern->prepare(m, op, num, &params);
    if (params != NULL) kern->release(params);
    return rc;
}

bool emu_op_supported(const EmuTargetDevice *d, const NeuronModel *m, const EmuOperation *op) {
    const EmuTargetOp *e = entry(d, op->code);
    if (e == NULL || emu_kernel(op->code) == NULL) return false;
    if (wide_form(m, op) ? !e->int16 || !has_16x8(op->code) : !e->supported) return false;
    for (uint32_t i = 0; i < op->n_in; i++) {
        const EmuOperand *o = &m->opnds[op->in[i]];
        if (o->lifetime != EMU_CONST && !within_limits(d, e, o)) return false;
    }
    const EmuOperand *out = &m->opnds[op->out[0]];
    if (!within_limits(d, e, out)) return false;
    const int32_t c = op->code;
    if ((c == NEURON_CONV_2D || c == NEURON_DEPTHWISE_CONV_2D || c == NEURON_FULLY_CONNECTED) &&
        m->opnds[op->in[1]].type == NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL && !e->per_channel)
        return false;
    if ((c == NEURON_CONV_2D || c == NEURON_DEPTHWISE_CONV_2D || c == NEURON_AVERAGE_POOL_2D ||
         c == NEURON_MAX_POOL_2D) &&
        !padding_ok(m, op, e->padding))
        return false;
    if ((c == NEURON_ADD || c == NEURON_SUB || c == NEURON_MUL) && !e->broadcast &&
        !same_shape(&m->opnds[op->in[0]], &m->opnds[op->in[1]]))
        return false;
    if (e->shared_scale || c == NEURON_CONCATENATION) { /* the int8 kernel never rescales */
        const uint32_t n = c == NEURON_CONCATENATION ? op->n_in - 1 : op->n_in;
        for (uint32_t i = 0; i < n; i++) {
            const EmuOperand *o = &m->opnds[op->in[i]];
            if (emu_is_int8_act(o->type) && !emu_same_quant(o, out)) return false;
        }
    }
    if (e->keeps_input_scale && !emu_same_quant(&m->opnds[op->in[0]], out)) return false;
    if (e->has_fixed_output && out->type != NEURON_TENSOR_QUANT16_SYMM && /* int16: prepare's */
        (out->scale != e->fixed_output_scale || out->zero_point != e->fixed_output_zero_point))
        return false;
    return emu_op_validate(m, op) == NEURON_NO_ERROR; /* what compilation prepares */
}

bool emu_model_op_mappable(const NeuronModel *m, const EmuOperation *op,
                           const EmuTargetDevice *const *devs, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (emu_op_supported(devs[i], m, op)) return true;
    return false;
}

void emu_note_unmappable(const char *fn, const NeuronModel *m, const EmuTargetDevice *const *devs,
                         uint32_t n) {
    const EmuTargetDevice *all[EMU_MAX_DEVICES];
    if (n == 0) {
        for (uint32_t i = 0; i < device_count() && i < EMU_MAX_DEVICES; i++)
            all[n++] = &emu_target_devices[i];
        devs = all;
    }
    for (uint32_t k = 0; k < m->n_ops; k++) {
        if (emu_model_op_mappable(m, &m->ops[k], devs, n)) continue;
        emu_note(fn, "operation %u (%s) maps on no device %s (NEURON_UNMAPPABLE; "
                 "NeuronCompilation_getSupportedOperations answers per operation)", k,
                 neuron_op_name(m->ops[k].code), n == 1 ? devs[0]->name : "of the compilation");
        return;
    }
}

bool emu_model_mappable(const NeuronModel *m, const EmuTargetDevice *const *devs, uint32_t n) {
    for (uint32_t k = 0; k < m->n_ops; k++)
        if (!emu_model_op_mappable(m, &m->ops[k], devs, n)) return false;
    return true;
}

/* ---- the rest of the device and version calls ---------------------------------------------- */

/* The emulator has no throughput mode (a vendor scheduler feature): known features say false. */
int Neuron_getFeatureSupportedStatus(NeuronFeatureType type, bool *supported) {
    emu_trace(__func__, "%d", (int)type);
    if (supported == NULL) return NEURON_UNEXPECTED_NULL;
    if (type != NEURON_FEATURE_NONE && type != NEURON_THROUGHPUT_MODE) return NEURON_BAD_DATA;
    *supported = false;
    return NEURON_NO_ERROR;
}

/* No L1 memory is modeled (and MT6886's is unmeasured): 0 KB, which tells a client such as
 * LiteRT to leave NeuronCompilation_setL1MemorySizeKb alone. */
int Neuron_getL1MemorySizeKb(uint32_t *sizeKb) {
    EMU_TRACE();
    if (sizeKb == NULL) return NEURON_UNEXPECTED_NULL;
    *sizeKb = 0;
    return NEURON_NO_ERROR;
}

int NeuronDevice_getDescription(const NeuronDevice *device, const char **description) {
    EMU_TRACE();
    if (device == NULL || description == NULL) return NEURON_UNEXPECTED_NULL;
    const uint32_t n = device_count();
    for (uint32_t i = 0; i < n; i++) {
        if (device != &devices[i]) continue;
        static char text[EMU_MAX_DEVICES][160]; /* valid for the life of the process */
        if (text[i][0] == '\0')
            snprintf(text[i], sizeof text[i], "%s emulated by libneuron_emu (target %s, SoC %s)",
                     emu_target_devices[i].name, emu_target_name,
                     *emu_target_socs ? emu_target_socs : "unknown");
        *description = text[i];
        return NEURON_NO_ERROR;
    }
    return NEURON_BAD_DATA;
}

/* The one extension the emulator implements: com.mediatek.compiled_network, for its own
 * compiled networks (a DLA from MediaTek's compiler needs the vendor adapter). */
int NeuronDevice_getExtensionSupport(const char *extensionName, bool *isExtensionSupported) {
    EMU_TRACE();
    if (extensionName == NULL || isExtensionSupported == NULL) return NEURON_UNEXPECTED_NULL;
    *isExtensionSupported = strcmp(extensionName, EMU_EXT_COMPILED_NETWORK) == 0;
    return NEURON_NO_ERROR;
}

/* The emulator has no WHILE kernel; the timeouts are NNAPI's defaults (2 s, 15 s), in ns. */
uint64_t Neuron_getDefaultLoopTimeout(void) {
    EMU_TRACE();
    return UINT64_C(2000000000);
}

uint64_t Neuron_getMaximumLoopTimeout(void) {
    EMU_TRACE();
    return UINT64_C(15000000000);
}

/* emu_target_socs is "mt6886" or "mt6886,mt6xxx" (the target file's `soc`). */
static bool soc_listed(const char *soc) {
    const size_t n = strlen(soc);
    for (const char *p = emu_target_socs; *p;) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncasecmp(p, soc, n) == 0) return true;
        p += len + (end != NULL);
    }
    return false;
}

int emu_check_platform(const char *fn) {
    const char *soc = getenv("MTKNN_ADAPTER_DLA_PLATFORM");
    if (soc == NULL || *soc == '\0' || soc_listed(soc)) return NEURON_NO_ERROR;
    emu_note(fn, "MTKNN_ADAPTER_DLA_PLATFORM=%s: this emulator is built for target %s (SoC %s); "
             "build it for a target file whose soc is %s (mdla_emu.build_emulator)", soc, emu_target_name, *emu_target_socs ? emu_target_socs : "unknown",
             soc);
    return NEURON_BAD_DATA;
}

int emu_choose_device(NeuronCompilation *c, const NeuronModel *m) {
    for (uint32_t i = 0; i < device_count(); i++) {
        const EmuTargetDevice *d = &emu_target_devices[i];
        if (!emu_model_mappable(m, &d, 1)) continue;
        c->devs[0] = d;
        c->dev_index[0] = i;
        c->n_devs = 1;
        c->apu = emu_device_is_apu(d);
        return NEURON_NO_ERROR;
    }
    return NEURON_UNMAPPABLE;
}
