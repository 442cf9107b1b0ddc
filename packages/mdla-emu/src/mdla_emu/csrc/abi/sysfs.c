/*
 * sysfs.c: a fake APU runtime-PM node, so mdla_witness works end to end on a laptop.
 *
 * With env MDLA_EMU_SYSFS=DIR the emulator keeps DIR/power/{runtime_status,
 * runtime_active_time, runtime_suspended_time} as the phone's apu_top node does (silicon fact 9):
 *   - "suspended" while idle; a compute on an APU device resumes it ("active");
 *   - after the last compute it autosuspends once EMU_AUTOSUSPEND_MS pass with no new compute
 *     (a timer thread), or at once when the process exits;
 *   - runtime_active_time / runtime_suspended_time are milliseconds, as Linux prints them: the
 *     active time grows only from resume to suspend, the suspended time over the rest, including
 *     the time between processes (taken from runtime_status's mtime at start-up).
 * Files are written whole to a temporary name and renamed into place (readers never see a
 * partial value). Without the variable nothing is touched.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "emu.h"

#define EMU_AUTOSUSPEND_MS 50

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t timer;
static bool inited, enabled, timer_running, stopping, active;
static char power_dir[4096];
static uint64_t active_ms, suspended_ms; /* totals up to `since` */
static double since;                     /* wall seconds of the last transition/accounting */
static double deadline;                  /* when to autosuspend (active only) */
static int busy;                         /* computes in flight */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void write_file(const char *name, const char *text) {
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s", power_dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", power_dir, name);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) return;
    const bool ok = fputs(text, f) >= 0;
    if (fclose(f) == 0 && ok) rename(tmp, path);
}

static uint64_t read_ms(const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", power_dir, name);
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    if (f == NULL) return 0;
    if (fscanf(f, "%llu", &v) != 1) v = 0;
    fclose(f);
    return (uint64_t)v;
}

/* Fold the time since the last accounting into the current state's total; lock held. */
static void account(double t) {
    const double dt = t - since;
    if (dt > 0) {
        const uint64_t ms = (uint64_t)(dt * 1000.0);
        if (active) active_ms += ms;
        else suspended_ms += ms;
        since += (double)ms / 1000.0; /* keep the sub-millisecond remainder for later */
    }
}

static void publish(void) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)active_ms);
    write_file("runtime_active_time", buf);
    snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)suspended_ms);
    write_file("runtime_suspended_time", buf);
    write_file("runtime_status", active ? "active\n" : "suspended\n");
}

static void init_locked(void) {
    if (inited) return;
    inited = true;
    const char *dir = getenv("MDLA_EMU_SYSFS");
    if (dir == NULL || dir[0] == '\0') return;
    char base[3900];
    if (strlen(dir) >= sizeof base) return; /* a path this long is not a sysfs node */
    snprintf(base, sizeof base, "%s", dir);
    snprintf(power_dir, sizeof power_dir, "%s/power", base);
    if ((mkdir(base, 0755) != 0 && errno != EEXIST) ||
        (mkdir(power_dir, 0755) != 0 && errno != EEXIST))
        return;
    enabled = true;
    since = now_s();
    active_ms = read_ms("runtime_active_time");
    suspended_ms = read_ms("runtime_suspended_time");
    char status[4200];
    snprintf(status, sizeof status, "%s/runtime_status", power_dir);
    struct stat st;
    if (stat(status, &st) == 0) { /* suspended since the last process left it */
        const double last = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9;
        if (since > last) suspended_ms += (uint64_t)((since - last) * 1000.0);
    }
    publish();
}

static void suspend_locked(void) {
    if (!active) return;
    account(now_s());
    active = false;
    publish();
}

static void *timer_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!stopping) {
        if (active && busy == 0 && now_s() >= deadline) {
            suspend_locked();
            continue;
        }
        if (active && busy == 0) {
            struct timespec ts;
            const double d = deadline;
            ts.tv_sec = (time_t)d;
            ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
            pthread_cond_timedwait(&wake, &lock, &ts);
        } else {
            pthread_cond_wait(&wake, &lock);
        }
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

void emu_apu_begin(void) {
    pthread_mutex_lock(&lock);
    init_locked();
    if (enabled) {
        busy++;
        if (!active) {
            account(now_s());
            active = true;
            publish();
        }
        if (!timer_running && pthread_create(&timer, NULL, timer_main, NULL) == 0)
            timer_running = true;
    }
    pthread_mutex_unlock(&lock);
}

void emu_apu_end(void) {
    pthread_mutex_lock(&lock);
    if (enabled) {
        busy--;
        account(now_s());
        deadline = now_s() + EMU_AUTOSUSPEND_MS / 1000.0;
        publish();
        pthread_cond_broadcast(&wake);
    }
    pthread_mutex_unlock(&lock);
}

#if defined(__GNUC__) || defined(__clang__)
/* At load: the node exists (suspended) before the first compute, as on the phone. */
__attribute__((constructor)) static void emu_apu_load(void) {
    pthread_mutex_lock(&lock);
    init_locked();
    pthread_mutex_unlock(&lock);
}

/* At exit: suspend at once and stop the timer (the process's APU work is over). */
__attribute__((destructor)) static void emu_apu_exit(void) {
    pthread_mutex_lock(&lock);
    const bool running = timer_running;
    if (enabled) suspend_locked();
    stopping = true;
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    if (running) pthread_join(timer, NULL);
}
#endif
