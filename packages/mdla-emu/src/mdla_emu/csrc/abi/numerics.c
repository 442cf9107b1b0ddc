/*
 * numerics.c: MdlaEmu_setRounding (numerics.h) and the arithmetic a compilation finishes with:
 * its rounding, the target's accumulator fact, and the environment's overrides for experiments,
 * each announced on stderr when it changes the arithmetic.
 */
#include <stdlib.h>
#include <string.h>

#include "compilation.h"

int MdlaEmu_setRounding(NeuronCompilation *compilation, int32_t rounding) {
    emu_trace(__func__, "%d", (int)rounding);
    if (compilation == NULL) return NEURON_UNEXPECTED_NULL;
    if (compilation->finished) return NEURON_BAD_STATE;
    if (rounding != MDLA_EMU_ROUNDING_DOUBLE && rounding != MDLA_EMU_ROUNDING_SINGLE)
        return NEURON_BAD_DATA;
    compilation->rounding = rounding;
    return NEURON_NO_ERROR;
}

/* The compiled network's header: "MDLAEMUC", u32 version, then the u32 rounding (compilation.c):
 * little-endian at byte 12; blobs written before it was recorded hold 0 (double). */
int32_t emu_blob_rounding(const void *buffer, size_t size) {
    const uint8_t *b = buffer;
    if (size < 16) return EMU_ROUND_DOUBLE;
    const uint32_t r = (uint32_t)b[12] | (uint32_t)b[13] << 8 | (uint32_t)b[14] << 16 |
                       (uint32_t)b[15] << 24;
    return r == EMU_ROUND_SINGLE ? EMU_ROUND_SINGLE : EMU_ROUND_DOUBLE;
}

/* The value of `name` when it is one of the two words (index 0 or 1), else -1 (unset: silent;
 * another word: a note, then ignored). */
static int env_choice(const char *name, const char *const words[2]) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') return -1;
    for (int i = 0; i < 2; i++)
        if (strcmp(v, words[i]) == 0) return i;
    emu_note("NeuronCompilation_finish", "%s=%s is ignored: expected %s or %s", name, v, words[0],
             words[1]);
    return -1;
}

EmuNumerics emu_numerics(const NeuronCompilation *c) {
    static const char *const roundings[2] = {"double", "single"}; /* EMU_ROUND_* order */
    static const char *const accumulators[2] = {"saturate", "wrap"};
    EmuNumerics num = {c->rounding, emu_target_accumulator_wrap};
    const int r = env_choice("MDLA_EMU_ROUNDING", roundings);
    if (r >= 0 && r != num.rounding) {
        emu_note("NeuronCompilation_finish", "MDLA_EMU_ROUNDING=%s overrides the compilation's "
                 "rounding `%s`", roundings[r], roundings[num.rounding]);
        num.rounding = r;
    }
    const int a = env_choice("MDLA_EMU_ACCUMULATOR", accumulators);
    if (a >= 0 && (a == 1) != num.wrap) {
        emu_note("NeuronCompilation_finish", "MDLA_EMU_ACCUMULATOR=%s overrides the target's "
                 "accumulator `%s`", accumulators[a], accumulators[num.wrap]);
        num.wrap = a == 1;
    }
    return num;
}
