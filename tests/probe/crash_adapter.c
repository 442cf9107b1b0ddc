/*
 * crash_adapter.c: the host emulator with one deliberate fault, for the probe's isolation test.
 * Built together with the emulator's sources, which are compiled with
 * -DNeuronModel_addOperation=emu_real_addOperation; this file defines the real entry point and
 * dies with SIGSEGV when a model adds a MUL (operation code 18), as a broken vendor library
 * might. Every other call is the emulator's.
 */
#include <signal.h>

#include "neuron_abi.h"

#undef NeuronModel_addOperation

int NeuronModel_addOperation(NeuronModel *model, NeuronOperationType type, uint32_t inputCount,
                             const uint32_t *inputs, uint32_t outputCount,
                             const uint32_t *outputs) {
    if ((int)type == 18) raise(SIGSEGV);
    return emu_real_addOperation(model, type, inputCount, inputs, outputCount, outputs);
}
