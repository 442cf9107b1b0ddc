/*
 * numerics.h: the emulator's own extension of the Neuron Adapter ABI, the arithmetic of a
 * compilation's int8 kernels. Not part of MediaTek's ABI: a client looks the function up with
 * dlsym(handle, "MdlaEmu_setRounding"); a real adapter has no such symbol, so the client skips
 * the call there and the silicon's own arithmetic applies.
 *
 *   MdlaEmu_setRounding(compilation, MDLA_EMU_ROUNDING_SINGLE)   between create and finish
 *
 * The requantization rounding is the model's (mdla-engine passes the manifest's recorded
 * `model.rounding`): double (gemmlowp's SaturatingRoundingDoublingHighMul then
 * RoundingDivideByPOT, TFLite's default build) or single (TFLITE_SINGLE_ROUNDING). Without the
 * call a compilation rounds double. Whether an int32 overflow in the requantization wraps or
 * saturates is the target's `[arith] accumulator` fact, built into the library.
 *
 * For experiments the environment may override both when a compilation finishes, and the
 * emulator says so on stderr each time it changes the arithmetic ("libneuron_emu: note: ..."):
 *   MDLA_EMU_ROUNDING=single|double      instead of the compilation's rounding
 *   MDLA_EMU_ACCUMULATOR=wrap|saturate   instead of the target's fact
 */
#ifndef MDLA_EMU_NUMERICS_H
#define MDLA_EMU_NUMERICS_H

#include <stdint.h>

#include "neuron_abi.h"

#define MDLA_EMU_ROUNDING_DOUBLE 0
#define MDLA_EMU_ROUNDING_SINGLE 1

/* NEURON_NO_ERROR; NEURON_UNEXPECTED_NULL for no compilation, NEURON_BAD_STATE once finished,
 * NEURON_BAD_DATA for a rounding that is neither of the two. */
int MdlaEmu_setRounding(NeuronCompilation *compilation, int32_t rounding);
typedef int (*MdlaEmu_setRounding_fn)(NeuronCompilation *compilation, int32_t rounding);

#endif /* MDLA_EMU_NUMERICS_H */
