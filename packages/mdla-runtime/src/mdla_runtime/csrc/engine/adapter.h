/*
 * adapter.h: loading a Neuron Adapter library with dlopen and resolving its functions.
 *
 * Without --lib the engine tries the names phones ship, in the order real users try them
 * (reference/neuron-adapter-abi.md §0): libneuronusdk_adapter.mtk.so; when NeuroPilot's magic
 * number (libneuron_sys_util.mtk.so) is >= 300, libneuronusdk_adapter.9.mtk.so and
 * libneuronusdk_adapter.so; then libneuron_adapter_mgvi.so and libneuron_adapter.so.
 */
#ifndef MDLA_ADAPTER_H
#define MDLA_ADAPTER_H

#include "neuron_abi.h"
#include "numerics.h"

typedef struct {
    void *handle;
    char path[512];
#define MDLA_API_FIELD(name, ret, params) name##_fn name;
    MDLA_NEURON_FUNCTIONS(MDLA_API_FIELD)
#undef MDLA_API_FIELD
    /* The host emulator's extension (numerics.h), NULL on a real adapter. */
    MdlaEmu_setRounding_fn MdlaEmu_setRounding;
} neuron_api;

/* Opens `lib` (or the default names when NULL). False with a message naming every name tried. */
bool adapter_open(neuron_api *api, const char *lib, char *msg, size_t msg_size);

/* True when every function in the NULL-terminated `names` resolved; else lists the missing. */
bool adapter_require(const neuron_api *api, const char *const *names, char *msg, size_t msg_size);

void adapter_close(neuron_api *api);

#endif /* MDLA_ADAPTER_H */
