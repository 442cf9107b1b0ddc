/*
 * pool.c: the worker threads kernels split their work over (MDLA_EMU_THREADS for an
 * emulator compilation, MDLA_CPU_THREADS for an engine's cpu partition).
 *
 * A process has one pool per thread count, shared by its owners (the compilations of an
 * emulator, the cpu partitions of an engine) and freed with the last: its threads start once
 * and serve every execution of every owner, so an engine that alternates between 40 mtk-mdla
 * partitions and 40 cpu ones has one worker on each side, not 80 spinning.
 *
 * emu_parallel_for cuts [0, count) into PER_THREAD contiguous chunks per thread (fewer when
 * the job holds fewer grains), equal to an item. The caller claims them from the front, the
 * workers from the back, one at a time, until none is left, each running its chunks with its
 * own scratch (the caller's is 0, worker t's t): a thread that starts late or runs slower (its
 * half of the data in the other core's cache) takes fewer, so neither waits for the other's
 * last quarter, and each still works on one end of the tensor, as in the op before. Each output
 * element is computed by the same code whatever the cut and whoever runs it, so results do not
 * depend on the thread count.
 *
 * Hand-off: the caller publishes a job by moving `state` to a new generation; a worker waiting
 * for one spins for up to MDLA_EMU_SPIN_US (default EMU_SPIN_US; past its first few hundred
 * pauses it yields the core each turn) before it sleeps on a condition variable, and the caller
 * waits for chunks in flight the same way. Between the split ops of one execution nobody
 * sleeps, so a split op costs a cache-line hand-off, not a futex wake-up (tens of microseconds
 * on a virtual machine's idle core). The sleep side is Dekker-safe: a sleeper announces itself
 * (sleepers, caller_sleeping) under the lock before it re-checks, and the waker reads that
 * announcement after its own sequentially consistent write.
 *
 * A job splits only when it holds two grains or more; kernels size grains with emu_par_grain
 * so a thread takes at least MDLA_EMU_MIN_WORK (default EMU_MIN_WORK) units of work (about one
 * output byte's worth each): below that, handing a chunk over costs more than it saves. Two
 * executions computing at once share the pool: the one that finds it busy runs its op on its
 * own thread.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "kernels.h"

/* state = generation << GEN_SHIFT | end << CHUNK_BITS | begin: chunks [begin, end) unclaimed */
#define CHUNK_BITS 10
#define GEN_SHIFT (2 * CHUNK_BITS)
#define CHUNK_MASK ((1u << CHUNK_BITS) - 1)
#define PAUSES 256 /* spin turns with a pause before each turn yields the core */
#define PER_THREAD 4 /* chunks per thread, when the job holds that many grains */
_Static_assert(EMU_MAX_THREADS * PER_THREAD < (1 << CHUNK_BITS), "a chunk count fits its field");

struct EmuPool {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    pthread_t *threads;
    int n;            /* threads, the caller included */
    int asked;        /* the count it was acquired for (n is less when a thread failed) */
    int started;      /* workers running */
    int64_t min_work; /* MDLA_EMU_MIN_WORK at creation */
    int64_t spin_ns;  /* MDLA_EMU_SPIN_US at creation, in ns */
    uint64_t gen;     /* the caller's count of jobs */
    atomic_flag busy; /* a job is running (another execution's op runs inline) */
    /* the current job, published with its generation */
    EmuTaskFn fn;
    const void *ctx;
    int64_t count;
    int chunks;
    uint8_t *scratch;
    size_t scratch_len;
    /* the hand-off words, on their own cache lines */
    _Alignas(64) atomic_uint_fast64_t state;
    atomic_int sleepers; /* workers asleep (or about to be) */
    atomic_bool quit;
    _Alignas(64) atomic_int remaining; /* chunks of the current job not finished */
    atomic_bool caller_sleeping;
};

typedef struct {
    EmuPool *pool;
    int id; /* its scratch: the caller's is 0 */
} Worker;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* One turn of a spin-wait: a pause at first, then a yield (another thread may want the core). */
static void backoff(unsigned turn) {
    if (turn >= PAUSES) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* How many chunks [0, count) is cut into: PER_THREAD per thread, as long as each holds a
 * grain. */
static int chunks_of(int64_t count, int64_t grain, int n) {
    const int64_t whole = count / grain;
    return whole < n * PER_THREAD ? (int)whole : n * PER_THREAD;
}

/* Chunk t of k over [0, count): equal to an item, so no thread waits on a bigger share. */
static void chunk(int64_t count, int t, int k, int64_t *begin, int64_t *end) {
    *begin = count * t / k;
    *end = count * (t + 1) / k;
}

/* Claim a chunk of job `gen`, the first unclaimed one (the caller) or the last (a worker):
 * its index, or -1 when none is left (or the job is over). */
static int claim(EmuPool *p, uint64_t gen, bool first) {
    uint_fast64_t s = atomic_load_explicit(&p->state, memory_order_acquire);
    for (;;) {
        const int begin = (int)(s & CHUNK_MASK), end = (int)((s >> CHUNK_BITS) & CHUNK_MASK);
        if (s >> GEN_SHIFT != gen || begin >= end) return -1;
        const uint_fast64_t next = first ? s + 1 : s - ((uint_fast64_t)1 << CHUNK_BITS);
        if (atomic_compare_exchange_weak_explicit(&p->state, &s, next, memory_order_acq_rel,
                                                  memory_order_acquire))
            return first ? begin : end - 1;
    }
}

/* Run every chunk of job `gen` thread id can claim, from the front (the caller) or the back,
 * with its scratch; the last one finished wakes the caller. */
static void run_chunks(EmuPool *p, uint64_t gen, int id) {
    int c;
    while ((c = claim(p, gen, id == 0)) >= 0) {
        int64_t begin, end;
        chunk(p->count, c, p->chunks, &begin, &end);
        if (begin < end) p->fn(p->ctx, begin, end, p->scratch + (size_t)id * p->scratch_len);
        if (atomic_fetch_sub(&p->remaining, 1) == 1 && atomic_load(&p->caller_sleeping)) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

static uint64_t generation(EmuPool *p) {
    return atomic_load_explicit(&p->state, memory_order_acquire) >> GEN_SHIFT;
}

/* The next job's generation after `seen`; `seen` itself when the pool quits. */
static uint64_t await_job(EmuPool *p, uint64_t seen) {
    const int64_t end = now_ns() + p->spin_ns;
    for (unsigned turn = 0; generation(p) == seen && !atomic_load(&p->quit); turn++) {
        if (turn % 64 == 63 && now_ns() >= end) break;
        backoff(turn);
    }
    uint64_t g = generation(p);
    if (g != seen || atomic_load(&p->quit)) return atomic_load(&p->quit) ? seen : g;
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add(&p->sleepers, 1);
    /* a sequentially consistent load after the announcement (Dekker, against the caller's) */
    while ((g = atomic_load(&p->state) >> GEN_SHIFT) == seen && !atomic_load(&p->quit))
        pthread_cond_wait(&p->work, &p->lock);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->lock);
    return atomic_load(&p->quit) ? seen : g;
}

static void *worker_main(void *arg) {
    EmuPool *p = ((Worker *)arg)->pool;
    const int id = ((Worker *)arg)->id;
    free(arg);
    uint64_t seen = 0;
    for (;;) {
        const uint64_t g = await_job(p, seen);
        if (g == seen) break; /* quit */
        seen = g;
        run_chunks(p, g, id);
    }
    return NULL;
}

/* The caller's wait for the chunks other threads still run: spin, then sleep. */
static void await_done(EmuPool *p) {
    const int64_t end = now_ns() + p->spin_ns;
    for (unsigned turn = 0; atomic_load(&p->remaining) > 0; turn++) {
        if (turn % 64 == 63 && now_ns() >= end) break;
        backoff(turn);
    }
    if (atomic_load(&p->remaining) == 0) return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->caller_sleeping, true);
    while (atomic_load(&p->remaining) > 0) pthread_cond_wait(&p->done, &p->lock);
    atomic_store(&p->caller_sleeping, false);
    pthread_mutex_unlock(&p->lock);
}

static int64_t env_int(const char *var, int64_t fallback, int64_t min) {
    const char *v = getenv(var);
    if (v == NULL || *v == '\0') return fallback;
    char *end = NULL;
    const long long n = strtoll(v, &end, 10);
    return *end != '\0' || n < min ? fallback : (int64_t)n;
}

int emu_env_threads(const char *var) {
    const int64_t n = env_int(var, 1, 1);
    return n > EMU_MAX_THREADS ? EMU_MAX_THREADS : (int)n;
}

int64_t emu_par_grain(const EmuScratch *s, int64_t work_per_item) {
    const int64_t min = s->pool == NULL ? EMU_MIN_WORK : s->pool->min_work;
    if (work_per_item < 1) work_per_item = 1;
    return (min + work_per_item - 1) / work_per_item;
}

static void start_workers(EmuPool *p, int threads) {
    for (int t = 1; t < threads; t++) {
        Worker *w = malloc(sizeof *w);
        if (w == NULL) break;
        w->pool = p;
        w->id = t;
        if (pthread_create(&p->threads[t], NULL, worker_main, w) != 0) {
            free(w);
            break;
        }
        p->started++;
        p->n++;
    }
}

static void pool_free(EmuPool *p);

static EmuPool *pool_create(int threads) {
    EmuPool *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->min_work = env_int("MDLA_EMU_MIN_WORK", EMU_MIN_WORK, 1);
    p->spin_ns = env_int("MDLA_EMU_SPIN_US", EMU_SPIN_US, 0) * 1000;
    p->threads = calloc((size_t)threads, sizeof *p->threads);
    if (p->threads == NULL || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p->threads);
        free(p);
        return NULL;
    }
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_flag_clear(&p->busy);
    atomic_init(&p->state, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->quit, false);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->caller_sleeping, false);
    p->n = 1;
    p->asked = threads;
    start_workers(p, threads);
    if (p->n == 1) {
        pool_free(p);
        return NULL;
    }
    return p;
}

static void pool_free(EmuPool *p) {
    atomic_store(&p->quit, true);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int t = 1; t <= p->started; t++) pthread_join(p->threads[t], NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
}

/* Jobs handed to a pool's threads since the library loaded (emu_split_jobs). */
static atomic_uint_fast64_t split_jobs;

uint64_t emu_split_jobs(void) { return atomic_load_explicit(&split_jobs, memory_order_relaxed); }

/* The process's pools, one per thread count, and how many owners hold each. */
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static EmuPool *shared[EMU_MAX_THREADS + 1];
static int owners[EMU_MAX_THREADS + 1];

EmuPool *emu_pool_acquire(int threads) {
    if (threads <= 1) return NULL;
    if (threads > EMU_MAX_THREADS) threads = EMU_MAX_THREADS;
    pthread_mutex_lock(&shared_lock);
    if (owners[threads] == 0) shared[threads] = pool_create(threads);
    EmuPool *p = shared[threads];
    if (p != NULL) owners[threads]++;
    pthread_mutex_unlock(&shared_lock);
    return p;
}

void emu_pool_release(EmuPool *p) {
    if (p == NULL) return;
    pthread_mutex_lock(&shared_lock);
    const bool last = --owners[p->asked] == 0;
    if (last) shared[p->asked] = NULL;
    pthread_mutex_unlock(&shared_lock);
    if (last) pool_free(p);
}

int emu_pool_threads(const EmuPool *p) { return p == NULL ? 1 : p->n; }

void emu_parallel_for(EmuScratch *s, int64_t count, int64_t grain, EmuTaskFn fn,
                      const void *ctx) {
    EmuPool *p = s->pool;
    if (grain < 1) grain = 1;
    const int chunks = p == NULL ? 1 : chunks_of(count, grain, p->n);
    if (chunks <= 1 || atomic_flag_test_and_set(&p->busy)) {
        if (count > 0) fn(ctx, 0, count, s->scratch);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->count = count;
    p->chunks = chunks;
    p->scratch = s->scratch;
    p->scratch_len = s->scratch_len;
    atomic_fetch_add_explicit(&split_jobs, 1, memory_order_relaxed);
    atomic_store(&p->remaining, chunks);
    const uint64_t gen = ++p->gen;
    atomic_store(&p->state, (uint_fast64_t)gen << GEN_SHIFT | (uint_fast64_t)chunks << CHUNK_BITS);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->work);
        pthread_mutex_unlock(&p->lock);
    }
    run_chunks(p, gen, 0);
    await_done(p);
    atomic_flag_clear(&p->busy);
}
