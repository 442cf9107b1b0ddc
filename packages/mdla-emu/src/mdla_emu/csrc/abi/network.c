/*
 * network.c: compiled networks beyond store/restore (compilation.c): the com.mediatek.compiled_
 * network extension operation (ExecuTorch's load route, LiteRT dispatch's fallback), the
 * compilation cache of NeuronCompilation_setCaching, and restoreFromCompiledNetworkV2.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compilation.h"

/* ---- the compiled-network extension operation ------------------------------------------------ */

/* The devices a stored network names become the compilation's (apu accumulates). */
static void set_devices(NeuronCompilation *c, const NeuronDevice *const *devs, uint32_t n_devs) {
    for (uint32_t i = 0; i < n_devs; i++) {
        c->devs[i] = emu_device_spec(devs[i]);
        c->dev_index[i] = devs[i]->index;
        c->apu = c->apu || emu_device_is_apu(c->devs[i]);
    }
    c->n_devs = n_devs;
}

/* A model of one com.mediatek.compiled_network operation (inputs: the N model inputs and the
 * network operand; outputs: the M model outputs) compiles to the network it carries, whose N
 * inputs and M outputs take the placeholders' places. The network must be one this emulator
 * stored: a DLA from MediaTek's compiler needs the vendor adapter. */
int emu_expand_extension(NeuronCompilation *c) {
    const NeuronModel *m = c->source;
    if (m->n_ops != 1 || m->ops[0].code != EMU_OP_COMPILED_NETWORK) return NEURON_NO_ERROR;
    const EmuOperation *op = &m->ops[0];
    const EmuOperand *blob = NULL;
    for (uint32_t i = 0; i < op->n_in; i++)
        if (emu_is_ext_type(m->opnds[op->in[i]].type)) blob = &m->opnds[op->in[i]];
    if (blob == NULL || !blob->has_value || blob->omitted) return NEURON_BAD_DATA;
    const NeuronDevice *devs[EMU_MAX_DEVICES];
    uint32_t n_devs = 0;
    int32_t pref = 0, prio = 0;
    NeuronModel *net = NULL;
    int rc = emu_restore_model(blob->value, blob->value_len, &net, devs, &n_devs, &pref, &prio);
    if (rc == NEURON_BAD_DATA && (blob->value_len < 8 || memcmp(blob->value, "MDLAEMUC", 8) != 0))
        emu_note("NeuronCompilation_finish", "the %s operand holds %zu bytes that are not a "
                 "network this emulator compiled (a DLA from MediaTek's compiler runs only on the "
                 "vendor adapter)", EMU_EXT_COMPILED_NETWORK, blob->value_len);
    if (rc != NEURON_NO_ERROR) return rc;
    if (net->n_inputs != m->n_inputs || net->n_outputs != m->n_outputs) {
        emu_model_release(net);
        return NEURON_BAD_DATA;
    }
    c->expanded = net;
    c->source = net;
    if (c->n_devs == 0) set_devices(c, devs, n_devs); /* adapter-chosen: where it was compiled */
    return NEURON_NO_ERROR;
}

/* ---- caching: <cacheDir>/mdla-emu-<token hex>.bin holds the compiled network ----------------- */

static bool cache_path(const NeuronCompilation *c, char *path, size_t len) {
    if (c->cache_dir == NULL) return false;
    char hex[2 * NEURON_BYTE_SIZE_OF_CACHE_TOKEN + 1];
    for (int i = 0; i < NEURON_BYTE_SIZE_OF_CACHE_TOKEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", c->token[i]);
    const int n = snprintf(path, len, "%s/mdla-emu-%s.bin", c->cache_dir, hex);
    return n > 0 && (size_t)n < len;
}

/* A cache entry for the token replaces the model (a collision of tokens is the caller's, as the
 * header says); a missing or unreadable entry means compiling as usual. */
bool emu_cache_load(NeuronCompilation *c) {
    char path[4096];
    if (!cache_path(c, path, sizeof path)) return false;
    FILE *f = fopen(path, "rb");
    if (f == NULL) return false;
    uint8_t *buf = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size)) != NULL &&
        fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf == NULL) return false;
    const NeuronDevice *devs[EMU_MAX_DEVICES];
    uint32_t n_devs = 0;
    int32_t pref = 0, prio = 0;
    NeuronModel *net = NULL;
    const int rc = emu_restore_model(buf, (size_t)size, &net, devs, &n_devs, &pref, &prio);
    free(buf);
    if (rc != NEURON_NO_ERROR) return false;
    emu_model_release(c->expanded);
    c->expanded = net;
    c->source = net;
    c->apu = false;
    set_devices(c, devs, n_devs);
    return true;
}

/* `size` bytes to `path`, whole or not at all: written to a fresh file mkstemp makes in the
 * same directory (owner-only, O_EXCL: never a name planted in advance, never through a symlink),
 * synced, then renamed over `path`, so a reader never sees half an entry. */
static void write_atomically(const char *path, const uint8_t *buf, size_t size) {
    char tmp[4160];
    const int n = snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof tmp) return;
    const int fd = mkstemp(tmp);
    if (fd < 0) return;
    size_t done = 0;
    while (done < size) {
        const ssize_t w = write(fd, buf + done, size - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    const bool ok = done == size && fsync(fd) == 0;
    if (close(fd) == 0 && ok && rename(tmp, path) == 0) return;
    unlink(tmp);
}

void emu_cache_store(NeuronCompilation *c) {
    char path[4096];
    if (!cache_path(c, path, sizeof path)) return;
    size_t size = 0;
    emu_trace_silence(+1);
    uint8_t *buf = NeuronCompilation_getCompiledNetworkSize(c, &size) == NEURON_NO_ERROR
                       ? malloc(size)
                       : NULL;
    const bool ok = buf != NULL && NeuronCompilation_storeCompiledNetwork(c, buf, size) == 0;
    emu_trace_silence(-1);
    if (ok) write_atomically(path, buf, size);
    free(buf);
}

/* ---- restore with a compilation type --------------------------------------------------------- */

int NeuronModel_restoreFromCompiledNetworkV2(NeuronModel **model, NeuronCompilation **compilation,
                                             const void *buffer, const size_t size,
                                             const CompilationType *type) {
    EMU_TRACE();
    if (type == NULL) return NEURON_UNEXPECTED_NULL;
    if (*type == COMPILATION_TYPE_DEBUG_PLUS || *type < COMPILATION_TYPE_NORMAL ||
        *type > COMPILATION_TYPE_EXECUTION_CONTROLLER)
        return NEURON_BAD_DATA; /* DEBUG_PLUS is deprecated */
    emu_trace_silence(+1);
    const int rc = NeuronModel_restoreFromCompiledNetwork(model, compilation, buffer, size);
    emu_trace_silence(-1);
    if (rc == NEURON_NO_ERROR) (*compilation)->type = *type;
    return rc;
}
