/*
 * operand.c: the operand helpers (types, sizes, scalar values) the kernels and the model share.
 * Split from model.c so mdla-engine links the int8 kernels for its cpu partitions without the
 * emulator's Neuron ABI (cpu/cpu_part.c fills the model structs itself).
 */
#include <string.h>

#include "emu.h"

size_t emu_type_size(int32_t type) {
    switch (type) {
    case NEURON_FLOAT32: case NEURON_INT32: case NEURON_UINT32: case NEURON_TENSOR_FLOAT32:
    case NEURON_TENSOR_INT32:
        return 4;
    case NEURON_TENSOR_QUANT8_ASYMM: case NEURON_BOOL: case NEURON_TENSOR_BOOL8:
    case NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL: case NEURON_TENSOR_QUANT8_SYMM:
    case NEURON_TENSOR_QUANT8_ASYMM_SIGNED:
        return 1;
    case NEURON_TENSOR_QUANT16_SYMM: case NEURON_TENSOR_FLOAT16: case NEURON_FLOAT16:
    case NEURON_TENSOR_QUANT16_ASYMM:
        return 2;
    default:
        return 0;
    }
}

bool emu_is_tensor(int32_t type) {
    return !(type == NEURON_FLOAT32 || type == NEURON_INT32 || type == NEURON_UINT32 ||
             type == NEURON_BOOL || type == NEURON_FLOAT16);
}

bool emu_is_int8_act(int32_t type) {
    return type == NEURON_TENSOR_QUANT8_ASYMM_SIGNED || type == NEURON_TENSOR_QUANT8_SYMM;
}

uint64_t emu_elements(const EmuOperand *o) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < o->rank; i++) n *= o->dims[i];
    return n;
}

size_t emu_bytes(const EmuOperand *o) { return (size_t)emu_elements(o) * emu_type_size(o->type); }

bool emu_same_quant(const EmuOperand *a, const EmuOperand *b) {
    return a->scale == b->scale && a->zero_point == b->zero_point;
}

static const EmuOperand *scalar(const NeuronModel *m, uint32_t idx, int32_t type) {
    if (idx >= m->n_opnds) return NULL;
    const EmuOperand *o = &m->opnds[idx];
    if (o->type != type || !o->has_value || o->omitted || o->value_len != emu_type_size(type))
        return NULL;
    return o;
}

int emu_scalar_i32(const NeuronModel *m, uint32_t idx, int32_t *v) {
    const EmuOperand *o = scalar(m, idx, NEURON_INT32);
    if (o == NULL) return NEURON_BAD_DATA;
    memcpy(v, o->value, sizeof *v);
    return NEURON_NO_ERROR;
}

int emu_scalar_bool(const NeuronModel *m, uint32_t idx, bool *v) {
    const EmuOperand *o = scalar(m, idx, NEURON_BOOL);
    if (o == NULL) return NEURON_BAD_DATA;
    *v = *(const uint8_t *)o->value != 0;
    return NEURON_NO_ERROR;
}

int emu_scalar_f32(const NeuronModel *m, uint32_t idx, float *v) {
    const EmuOperand *o = scalar(m, idx, NEURON_FLOAT32);
    if (o == NULL) return NEURON_BAD_DATA;
    memcpy(v, o->value, sizeof *v);
    return NEURON_NO_ERROR;
}
