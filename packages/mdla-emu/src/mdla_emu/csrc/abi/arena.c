/*
 * arena.c: where an execution keeps its temporaries.
 *
 * Every temporary operand gets a byte offset in one block, fixed at finish, and two temporaries
 * share bytes only when no operation runs while both are live. Temporary t is live from the
 * first operation writing it to the last one reading it, both included (a compute runs the
 * operations in order, execution.c); one that no operation writes is live from the first
 * operation, one that none reads until its writer ends. So an operation's output never shares
 * bytes with its own inputs (both are live at that operation), and nothing overwrites a value
 * before its last reader has run. Placement: the temporaries largest first, each at the lowest
 * EMU_ARENA_ALIGN-aligned offset clear of every placed one whose life overlaps its own.
 *
 * Why: one malloc per temporary per execution (the sum of every intermediate tensor, tens of
 * MB for an ImageNet model) came back as fresh pages on every compute, each first touch a page
 * fault inside the timed compute; the planned block is the live peak, and the compilation keeps
 * the last freed execution's block for the next one (emu_arena_take / emu_arena_give), as a
 * driver keeps a prepared model's buffers. A temporary's bytes before its writer runs were
 * unspecified with malloc and stay so.
 */
#include <stdlib.h>
#include <string.h>

#include "compilation.h"

typedef struct {
    uint32_t operand;
    uint32_t first, last; /* operations: live from first to last, both included */
    size_t bytes;
} Life;

static size_t aligned(size_t bytes) {
    return (bytes + EMU_ARENA_ALIGN - 1) / EMU_ARENA_ALIGN * EMU_ARENA_ALIGN;
}

static int by_size_then_index(const void *a, const void *b) {
    const Life *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->operand < y->operand ? -1 : (x->operand > y->operand);
}

typedef struct {
    size_t lo, hi; /* bytes [lo, hi) */
} Span;

static int by_start(const void *a, const void *b) {
    const Span *x = a, *y = b;
    return x->lo < y->lo ? -1 : (x->lo > y->lo);
}

/* Each temporary's life (see the header); `n` returns how many there are. */
static Life *lives(const NeuronModel *m, uint32_t *n) {
    uint32_t *index = malloc((m->n_opnds ? m->n_opnds : 1) * sizeof *index);
    Life *l = malloc((m->n_opnds ? m->n_opnds : 1) * sizeof *l);
    if (index == NULL || l == NULL) {
        free(index);
        free(l);
        return NULL;
    }
    *n = 0;
    for (uint32_t i = 0; i < m->n_opnds; i++) {
        index[i] = UINT32_MAX;
        if (m->opnds[i].lifetime != EMU_TEMP) continue;
        const size_t bytes = emu_bytes(&m->opnds[i]);
        index[i] = *n;
        l[(*n)++] = (Life){i, UINT32_MAX, 0, aligned(bytes ? bytes : 1)};
    }
    for (uint32_t k = 0; k < m->n_ops; k++) {
        const EmuOperation *op = &m->ops[k];
        for (uint32_t j = 0; j < op->n_out; j++) {
            Life *t = index[op->out[j]] == UINT32_MAX ? NULL : &l[index[op->out[j]]];
            if (t != NULL && t->first == UINT32_MAX) t->first = k;
        }
    }
    for (uint32_t e = 0; e < *n; e++) /* never written: live from the start */
        if (l[e].first == UINT32_MAX) l[e].first = 0;
    for (uint32_t e = 0; e < *n; e++) l[e].last = l[e].first;
    for (uint32_t k = 0; k < m->n_ops; k++) {
        const EmuOperation *op = &m->ops[k];
        for (uint32_t j = 0; j < op->n_in; j++) {
            Life *t = index[op->in[j]] == UINT32_MAX ? NULL : &l[index[op->in[j]]];
            if (t == NULL) continue;
            if (k > t->last) t->last = k;
            if (k < t->first) t->first = k; /* read before any write: live from there */
        }
    }
    free(index);
    return l;
}

size_t *emu_arena_plan(const NeuronModel *m, size_t *arena) {
    *arena = 0;
    size_t *off = calloc(m->n_opnds ? m->n_opnds : 1, sizeof *off);
    uint32_t n = 0;
    Life *l = off != NULL ? lives(m, &n) : NULL;
    Span *busy = l != NULL ? malloc((n ? n : 1) * sizeof *busy) : NULL;
    if (busy == NULL) {
        free(off);
        free(l);
        return NULL;
    }
    qsort(l, n, sizeof *l, by_size_then_index);
    for (uint32_t e = 0; e < n; e++) {
        uint32_t nb = 0; /* the placed temporaries live at the same time as this one */
        for (uint32_t p = 0; p < e; p++)
            if (l[p].first <= l[e].last && l[e].first <= l[p].last)
                busy[nb++] = (Span){off[l[p].operand], off[l[p].operand] + l[p].bytes};
        qsort(busy, nb, sizeof *busy, by_start);
        size_t at = 0; /* the lowest gap that holds it */
        for (uint32_t b = 0; b < nb && busy[b].lo < at + l[e].bytes; b++)
            if (busy[b].hi > at) at = busy[b].hi;
        off[l[e].operand] = at;
        if (at + l[e].bytes > *arena) *arena = at + l[e].bytes;
    }
    free(busy);
    free(l);
    return off;
}

uint8_t *emu_arena_take(NeuronCompilation *c, size_t bytes) {
    uint8_t *block = __atomic_exchange_n(&c->spare, NULL, __ATOMIC_ACQ_REL);
    return block != NULL ? block : aligned_alloc(EMU_ARENA_ALIGN, aligned(bytes ? bytes : 1));
}

void emu_arena_give(NeuronCompilation *c, uint8_t *block) {
    uint8_t *empty = NULL;
    if (block != NULL && !__atomic_compare_exchange_n(&c->spare, &empty, block, false,
                                                      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        free(block); /* another execution's block is kept already */
}
