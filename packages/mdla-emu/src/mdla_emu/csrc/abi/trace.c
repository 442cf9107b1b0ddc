/*
 * trace.c: MDLA_EMU_TRACE (which ABI functions a client calls, in order) and the one-line
 * diagnostics for what only a vendor library could do.
 *
 * The trace file is opened once, in append mode, on the first call; every line is written and
 * flushed under a lock, so concurrent clients (or a client that loads the library several times)
 * never interleave within a line.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "emu.h"

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *trace_file;
static bool trace_opened;
static _Thread_local int silenced;

void emu_trace_silence(int delta) { silenced += delta; }

/* The trace file lives as long as the library: closed when it is unloaded (or at exit). */
__attribute__((destructor)) static void close_trace(void) {
    pthread_mutex_lock(&trace_lock);
    if (trace_file != NULL) fclose(trace_file);
    trace_file = NULL;
    pthread_mutex_unlock(&trace_lock);
}

void emu_trace(const char *fn, const char *fmt, ...) {
    if (silenced > 0) return;
    pthread_mutex_lock(&trace_lock);
    if (!trace_opened) {
        trace_opened = true;
        const char *path = getenv("MDLA_EMU_TRACE");
        if (path != NULL && *path) trace_file = fopen(path, "a");
    }
    if (trace_file != NULL) {
        fputs(fn, trace_file);
        if (fmt != NULL) {
            va_list ap;
            va_start(ap, fmt);
            fputc(' ', trace_file);
            vfprintf(trace_file, fmt, ap);
            va_end(ap);
        }
        fputc('\n', trace_file);
        fflush(trace_file);
    }
    pthread_mutex_unlock(&trace_lock);
}

void emu_note(const char *fn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "libneuron_emu: %s: ", fn);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

bool emu_is_ext_type(int32_t type) { return (type >> 16) == EMU_EXT_PREFIX; }
