/* compilation.h: the compilation record that compilation.c and execution.c share. */
#ifndef MDLA_EMU_COMPILATION_H
#define MDLA_EMU_COMPILATION_H

#include "emu.h"

struct NeuronCompilation {
    NeuronModel *source; /* the caller's finished model (it outlives the compilation) */
    NeuronModel *model;  /* the snapshot taken at finish: owns every value */
    const EmuTargetDevice *devs[EMU_MAX_DEVICES];
    uint32_t dev_index[EMU_MAX_DEVICES];
    uint32_t n_devs;
    bool apu; /* one of the devices sits in the APU power domain (mtk-mdla, mtk-dsp) */
    int32_t preference, priority;
    bool finished;
    int rounding;
    void **params;  /* frozen kernel params, one per operation */
    size_t scratch; /* the largest scratch any kernel needs */
};

int emu_env_rounding(void);

#endif /* MDLA_EMU_COMPILATION_H */
