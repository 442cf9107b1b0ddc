/*
 * pool.c: the worker threads an execution splits its kernels over (MDLA_EMU_THREADS).
 *
 * emu_parallel_for cuts [0, count) into one contiguous chunk per thread; chunk t runs on
 * thread t (the caller is thread 0) with its own scratch. Each output element is computed by
 * the same code whatever the cut, so results do not depend on the thread count.
 *
 * A job splits only when it holds more than one grain; kernels size grains with emu_par_grain
 * so a thread takes at least MDLA_EMU_MIN_WORK (default EMU_MIN_WORK) units of work (about one
 * output byte's worth each): below that, waking a worker costs more than it saves.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>

#include "kernels.h"

struct EmuPool {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    pthread_t *threads;
    int n;                 /* threads, the caller included */
    int64_t min_work;      /* MDLA_EMU_MIN_WORK at creation */
    int started;           /* workers running */
    uint64_t generation;   /* bumped per job */
    int pending;           /* workers still on the current job */
    bool quit;
    /* the current job */
    EmuTaskFn fn;
    const void *ctx;
    int64_t count, grain;
    uint8_t *scratch;
    size_t scratch_len;
};

typedef struct {
    EmuPool *pool;
    int index;
} Worker;

/* Chunk t of n over [0, count), in whole grains. */
static void chunk(int64_t count, int64_t grain, int t, int n, int64_t *begin, int64_t *end) {
    const int64_t grains = (count + grain - 1) / grain;
    *begin = grains * t / n * grain;
    *end = grains * (t + 1) / n * grain;
    if (*begin > count) *begin = count;
    if (*end > count) *end = count;
}

static void run_chunk(EmuPool *p, int t) {
    int64_t begin, end;
    chunk(p->count, p->grain, t, p->n, &begin, &end);
    if (begin < end) p->fn(p->ctx, begin, end, p->scratch + (size_t)t * p->scratch_len);
}

static void *worker_main(void *arg) {
    EmuPool *p = ((Worker *)arg)->pool;
    const int t = ((Worker *)arg)->index;
    free(arg);
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->quit && p->generation == seen) pthread_cond_wait(&p->work, &p->lock);
        if (p->quit) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        run_chunk(p, t);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int emu_env_threads(const char *var) {
    const char *v = getenv(var);
    if (v == NULL || *v == '\0') return 1;
    char *end = NULL;
    const long n = strtol(v, &end, 10);
    if (*end != '\0' || n < 1) return 1;
    return n > EMU_MAX_THREADS ? EMU_MAX_THREADS : (int)n;
}

static int64_t env_min_work(void) {
    const char *v = getenv("MDLA_EMU_MIN_WORK");
    if (v == NULL || *v == '\0') return EMU_MIN_WORK;
    char *end = NULL;
    const long long n = strtoll(v, &end, 10);
    return *end != '\0' || n < 1 ? EMU_MIN_WORK : (int64_t)n;
}

int64_t emu_par_grain(const EmuScratch *s, int64_t work_per_item) {
    const int64_t min = s->pool == NULL ? EMU_MIN_WORK : s->pool->min_work;
    if (work_per_item < 1) work_per_item = 1;
    return (min + work_per_item - 1) / work_per_item;
}

EmuPool *emu_pool_create(int threads) {
    if (threads <= 1) return NULL;
    EmuPool *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->min_work = env_min_work();
    p->threads = calloc((size_t)threads, sizeof *p->threads);
    if (p->threads == NULL || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p->threads);
        free(p);
        return NULL;
    }
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n = 1;
    for (int t = 1; t < threads; t++) {
        Worker *w = malloc(sizeof *w);
        if (w == NULL) break;
        w->pool = p;
        w->index = t;
        if (pthread_create(&p->threads[t], NULL, worker_main, w) != 0) {
            free(w);
            break;
        }
        p->started++;
        p->n++;
    }
    if (p->n == 1) {
        emu_pool_free(p);
        return NULL;
    }
    return p;
}

void emu_pool_free(EmuPool *p) {
    if (p == NULL) return;
    pthread_mutex_lock(&p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int t = 1; t <= p->started; t++) pthread_join(p->threads[t], NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
}

int emu_pool_threads(const EmuPool *p) { return p == NULL ? 1 : p->n; }

void emu_parallel_for(EmuScratch *s, int64_t count, int64_t grain, EmuTaskFn fn,
                      const void *ctx) {
    EmuPool *p = s->pool;
    if (grain < 1) grain = 1;
    if (p == NULL || count <= grain) {
        if (count > 0) fn(ctx, 0, count, s->scratch);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->count = count;
    p->grain = grain;
    p->scratch = s->scratch;
    p->scratch_len = s->scratch_len;
    p->pending = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    run_chunk(p, 0);
    pthread_mutex_lock(&p->lock);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
