/* adapter.c: dlopen of the Neuron Adapter and symbol resolution (see adapter.h). */
#define _POSIX_C_SOURCE 200809L
#include "adapter.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*magic_fn)(int32_t *magic);

static int neuropilot_magic(void) {
    void *h = dlopen("libneuron_sys_util.mtk.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    int32_t magic = 0;
    magic_fn fn;
    void *sym = dlsym(h, "NeuronService_getNeuroPilotMagicNumber");
    memcpy(&fn, &sym, sizeof fn);
    if (!sym || fn(&magic) != 0) magic = 0;
    dlclose(h);
    return magic;
}

static void resolve(neuron_api *api) {
    void *sym;
#define MDLA_RESOLVE(name, ret, params)                                                          \
    sym = dlsym(api->handle, #name);                                                           \
    memcpy(&api->name, &sym, sizeof api->name);
    MDLA_NEURON_FUNCTIONS(MDLA_RESOLVE)
    MDLA_RESOLVE(MdlaEmu_setRounding, int, ())
#undef MDLA_RESOLVE
}

static bool try_open(neuron_api *api, const char *name, char *msg, size_t msg_size) {
    api->handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    size_t len = strlen(msg);
    if (!api->handle) {
        const char *why = dlerror();
        snprintf(msg + len, msg_size - len, "%s  %s: %s", len ? "\n" : "", name, why ? why : "?");
        return false;
    }
    snprintf(api->path, sizeof api->path, "%s", name);
    resolve(api);
    return true;
}

bool adapter_open(neuron_api *api, const char *lib, char *msg, size_t msg_size) {
    memset(api, 0, sizeof *api);
    msg[0] = '\0';
    if (lib) return try_open(api, lib, msg, msg_size);
    if (try_open(api, "libneuronusdk_adapter.mtk.so", msg, msg_size)) return true;
    if (neuropilot_magic() >= 300) {
        if (try_open(api, "libneuronusdk_adapter.9.mtk.so", msg, msg_size)) return true;
        if (try_open(api, "libneuronusdk_adapter.so", msg, msg_size)) return true;
    }
    if (try_open(api, "libneuron_adapter_mgvi.so", msg, msg_size)) return true;
    return try_open(api, "libneuron_adapter.so", msg, msg_size);
}

static bool resolved(const neuron_api *api, const char *name) {
#define MDLA_CHECK(fn, ret, params)                                                              \
    if (strcmp(name, #fn) == 0) return api->fn != NULL;
    MDLA_NEURON_FUNCTIONS(MDLA_CHECK)
#undef MDLA_CHECK
    return false;
}

bool adapter_require(const neuron_api *api, const char *const *names, char *msg, size_t msg_size) {
    size_t len = 0;
    msg[0] = '\0';
    for (; *names; names++) {
        if (resolved(api, *names)) continue;
        len += (size_t)snprintf(msg + len, len < msg_size ? msg_size - len : 0, "%s%s",
                                len ? ", " : "", *names);
        if (len >= msg_size) len = msg_size - 1;
    }
    return len == 0;
}

void adapter_close(neuron_api *api) {
    if (api->handle) dlclose(api->handle);
    api->handle = NULL;
}
