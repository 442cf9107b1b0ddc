/* The calibration histogram's binning, one pass in C (mdla_quant.binning loads it).

   mdla_hist_bin(x, n, radius, scale, counts, bins, zeros) adds to counts[b] (bins + 1 entries)
   the number of x[i] with b = (int)((x[i] + radius) * scale), every operation in float32, which
   is the numpy definition's order (observers.Histogram._bin_counts), and to *zeros the number
   of x[i] == 0 (either sign). The caller promises finite x
   with |x| <= radius, so 0 <= t <= bins; anything else is clamped into that range (a NaN to
   bins) rather than cast out of range or counted out of bounds. Returns 0, or -1 for a bins
   outside 1..2^24 - 1, -2 when out of memory (counts untouched).

   mdla_hist_observe does the same and, in the same pass, finds the values' minimum and maximum
   and whether a +0 or a -0 occurs among them: calibration's Histogram.update reads
   these (numpy's x.min() and x.max() took two more passes over each activation) and binned at
   its current radius, which holds the values on every update after the first.

   Four sub-histograms take the elements in turn: a run of equal values (a ReLU's zeros) then
   increments four counters instead of waiting on one. Each holds uint32 counts, flushed into
   the int64 totals every CHUNK elements, so no sub-count can overflow. */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lanes.h"

#define WAYS 4
#define CHUNK ((size_t)1 << 30) /* elements per flush: CHUNK / WAYS < 2^32 per sub-count */

#define BLOCK 256 /* values binned into idx[] before their counts are incremented */

/* The bins of a block of values: t clamped into [0, bins] first (a NaN gives bins: `t < top`
   is false), so nothing is cast out of range or counted out of bounds; for the promised
   inputs the clamp changes nothing. A loop the compiler vectorizes (no scatter in it). */
static size_t bins_of(const float *x, size_t n, float radius, float scale, float top,
                      int32_t *idx) {
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++) {
        zeros += x[i] == 0.0f;
        float t = x[i] + radius;
        t = t * scale;
        t = t < top ? t : top;
        t = t > 0.0f ? t : 0.0f;
        idx[i] = (int32_t)t; /* 0 <= t <= 2^24: in range */
    }
    return zeros;
}

/* The values' range as integer keys: a float's bits with its low 31 bits flipped when its sign
   is set order as int32 the way the floats order, -0 just below +0 and a NaN beyond the
   infinity of its sign, so that a NaN is always the minimum or the maximum found (which the
   caller then sees is not finite). Integer minima, maxima and flags are reductions the
   compiler vectorizes. The key map is its own inverse. */
enum { SEEN_POS_ZERO = 1, SEEN_NEG_ZERO = 2 };
struct range {
    int32_t lo, hi;
    uint32_t seen;
};

static inline __attribute__((always_inline)) uint32_t key_of(uint32_t b) {
    return b ^ ((uint32_t)((int32_t)b >> 31) >> 1);
}

static inline __attribute__((always_inline)) void range_of(const float *restrict x, size_t n,
                                                          struct range *restrict r) {
    int32_t lo = r->lo, hi = r->hi;
    uint32_t seen = r->seen;
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, x + i, sizeof b);
        int32_t k = (int32_t)key_of(b);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
        seen |= (uint32_t)(b == 0u) | (uint32_t)(b == 0x80000000u) << 1;
    }
    r->lo = lo;
    r->hi = hi;
    r->seen = seen;
}

/* The block loop of both entry points; r (or NULL) takes the values' range as well. */
static inline __attribute__((always_inline)) size_t bin_chunk(const float *x, size_t n, float radius, float scale, uint32_t *sub,
                        size_t stride, struct range *r) {
    size_t zeros = 0;
    const float top = (float)(stride - 1); /* exact: bins < 2^24 */
    int32_t idx[BLOCK];
    for (size_t start = 0; start < n; start += BLOCK) {
        size_t len = n - start < BLOCK ? n - start : BLOCK;
        zeros += bins_of(x + start, len, radius, scale, top, idx);
        if (r != NULL) range_of(x + start, len, r);
        size_t i = 0;
        for (; i + WAYS <= len; i += WAYS) {
            for (size_t w = 0; w < WAYS; w++) sub[w * stride + (size_t)idx[i + w]]++;
        }
        for (; i < len; i++) sub[(size_t)idx[i]]++;
    }
    return zeros;
}

static inline __attribute__((always_inline)) int hist_bin(const float *x, size_t n, float radius, float scale, int64_t *counts,
                    size_t bins, int64_t *zeros, struct range *r) {
    if (bins == 0 || bins >= ((size_t)1 << 24)) return -1; /* bins exact in float */
    size_t stride = bins + 1;
    uint32_t *sub = calloc(WAYS * stride, sizeof *sub);
    if (sub == NULL) return -2;
    for (size_t start = 0; start < n; start += CHUNK) {
        size_t len = n - start < CHUNK ? n - start : CHUNK;
        *zeros += (int64_t)bin_chunk(x + start, len, radius, scale, sub, stride, r);
        for (size_t w = 0; w < WAYS; w++) {
            for (size_t b = 0; b < stride; b++) {
                counts[b] += sub[w * stride + b];
                sub[w * stride + b] = 0;
            }
        }
    }
    free(sub);
    return 0;
}

int mdla_hist_bin(const float *x, size_t n, float radius, float scale, int64_t *counts,
                  size_t bins, int64_t *zeros) {
    return hist_bin(x, n, radius, scale, counts, bins, zeros, NULL);
}

/* mdla_hist_bin, and in the same pass: range[0], range[1] = the minimum and the maximum of
   the values (n >= 1; a NaN among them is one of the two), *seen = SEEN_POS_ZERO |
   SEEN_NEG_ZERO for each zero that occurs. The counts hold only when every value is finite
   and within the radius, which the caller checks from these two. A zero minimum or maximum
   has the sign of the zeros when they all have one; with both, the caller cannot know which
   one numpy's min and max would give, and asks numpy. */
MDLA_CLONES
int mdla_hist_observe(const float *x, size_t n, float radius, float scale, int64_t *counts,
                      size_t bins, int64_t *zeros, float *range, int32_t *seen) {
    struct range r = {INT32_MAX, INT32_MIN, 0};
    int rc = hist_bin(x, n, radius, scale, counts, bins, zeros, &r);
    uint32_t lo = key_of((uint32_t)r.lo), hi = key_of((uint32_t)r.hi);
    memcpy(&range[0], &lo, sizeof lo);
    memcpy(&range[1], &hi, sizeof hi);
    *seen = (int32_t)r.seen;
    return rc;
}
