/*
 * broadcast.c: numpy broadcasting of two operands to the output (ADD, SUB, MUL, PRELU).
 *
 * Prepare right-aligns the three shapes to EMU_MAX_RANK dims and merges each dim into the one
 * inside it wherever both operands walk the two as one (a same-shape ADD is a single run of
 * every element; [n, h, w, c] * [n, 1, 1, c] is n * h * w runs of c). Eval cuts the output's
 * elements, not its runs, over the threads: a chunk may start or end inside a run, and each
 * element is still the run function's one value for its two codes.
 */
#include <stdint.h>

#include "kernels.h"

/* Merges dims with the dim inside them where both strides continue it; size-1 dims vanish. */
static void collapse(EmuBroadcast *bc) {
    const int r = EMU_MAX_RANK;
    int k = r; /* the outermost dim kept so far (r: none yet) */
    for (int i = r - 1; i >= 0; i--) {
        const uint32_t d = bc->dims[i];
        const uint64_t sa = bc->stride_a[i], sb = bc->stride_b[i];
        if (d == 1) continue;
        if (k < r && sa == bc->stride_a[k] * bc->dims[k] && sb == bc->stride_b[k] * bc->dims[k] &&
            (uint64_t)bc->dims[k] * d <= UINT32_MAX) {
            bc->dims[k] *= d;
            continue;
        }
        k--;
        bc->dims[k] = d;
        bc->stride_a[k] = sa;
        bc->stride_b[k] = sb;
    }
    if (k == r) k--, bc->dims[k] = 1, bc->stride_a[k] = bc->stride_b[k] = 0; /* one element */
    for (int i = 0; i < k; i++) bc->dims[i] = 1, bc->stride_a[i] = bc->stride_b[i] = 0;
}

int emu_broadcast_prepare(const EmuOperand *a, const EmuOperand *b, const EmuOperand *y,
                          EmuBroadcast *bc) {
    const uint32_t r = EMU_MAX_RANK;
    EMU_CHECK(a->rank <= r && b->rank <= r && y->rank == (a->rank > b->rank ? a->rank : b->rank));
    uint64_t sa = 1, sb = 1;
    for (uint32_t k = 0; k < r; k++) { /* k counts dims from the right */
        const uint32_t i = r - 1 - k;
        const uint32_t da = k < a->rank ? a->dims[a->rank - 1 - k] : 1;
        const uint32_t db = k < b->rank ? b->dims[b->rank - 1 - k] : 1;
        const uint32_t dy = k < y->rank ? y->dims[y->rank - 1 - k] : 1;
        EMU_CHECK((da == db || da == 1 || db == 1) && dy == (da > db ? da : db));
        bc->dims[i] = dy;
        bc->stride_a[i] = da == 1 ? 0 : sa;
        bc->stride_b[i] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
    }
    collapse(bc);
    bc->elem = (uint32_t)emu_type_size(y->type);
    return NEURON_NO_ERROR;
}

typedef struct {
    const EmuBroadcast *bc;
    const void *ctx;
    const int8_t *a, *b;
    int8_t *out;
    EmuRunFn fn;
} BroadcastJob;

/* Output elements [begin, end): the tail of the run `begin` falls in, whole runs, and the head
 * of the run `end` falls in, each handed to the run function from its first element. */
static void broadcast_range(const void *job, int64_t begin, int64_t end, uint8_t *scratch) {
    (void)scratch;
    const BroadcastJob *j = job;
    const EmuBroadcast *bc = j->bc;
    const uint32_t r = EMU_MAX_RANK, inner = bc->dims[r - 1];
    const uint64_t in_a = bc->stride_a[r - 1], in_b = bc->stride_b[r - 1];
    uint32_t idx[EMU_MAX_RANK] = {0};
    uint64_t rest = (uint64_t)begin / inner, at = (uint64_t)begin % inner;
    for (int i = (int)r - 2; i >= 0; i--) {
        idx[i] = (uint32_t)(rest % bc->dims[i]);
        rest /= bc->dims[i];
    }
    for (uint64_t e = (uint64_t)begin; e < (uint64_t)end; at = 0) {
        const uint64_t left = (uint64_t)end - e;
        const uint32_t count = inner - at < left ? inner - (uint32_t)at : (uint32_t)left;
        uint64_t oa = at * in_a, ob = at * in_b;
        for (uint32_t i = 0; i + 1 < r; i++) {
            oa += idx[i] * bc->stride_a[i];
            ob += idx[i] * bc->stride_b[i];
        }
        j->fn(j->ctx, j->a + oa * bc->elem, j->b + ob * bc->elem, j->out + e * bc->elem, count,
              (uint32_t)in_a, (uint32_t)in_b);
        e += count;
        for (int i = (int)r - 2; i >= 0; i--) { /* odometer over the outer dims */
            if (++idx[i] < bc->dims[i]) break;
            idx[i] = 0;
        }
    }
}

void emu_broadcast_run(const EmuBroadcast *bc, EmuScratch *s, int64_t work, const void *ctx,
                       const int8_t *a, const int8_t *b, int8_t *out, EmuRunFn fn) {
    uint64_t count = 1;
    for (uint32_t i = 0; i < EMU_MAX_RANK; i++) count *= bc->dims[i];
    const BroadcastJob job = {bc, ctx, a, b, out, fn};
    emu_parallel_for(s, (int64_t)count, emu_par_grain(s, work), broadcast_range, &job);
}
