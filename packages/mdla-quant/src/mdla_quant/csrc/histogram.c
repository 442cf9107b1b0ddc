/* The calibration histogram's binning, one pass in C (mdla_quant.binning loads it).

   mdla_hist_bin(x, n, radius, scale, counts, bins, zeros) adds to counts[b] (bins + 1 entries)
   the number of x[i] with b = (int)((x[i] + radius) * scale), every operation in float32, which
   is the numpy definition's order (observers.Histogram._bin_counts), and to *zeros the number
   of x[i] == 0 (either sign). The caller promises finite x
   with |x| <= radius, so 0 <= t <= bins; anything else is clamped into that range (a NaN to
   bins) rather than cast out of range or counted out of bounds. Returns 0, or -1 for a bins
   outside 1..2^24 - 1, -2 when out of memory (counts untouched).

   Four sub-histograms take the elements in turn: a run of equal values (a ReLU's zeros) then
   increments four counters instead of waiting on one. Each holds uint32 counts, flushed into
   the int64 totals every CHUNK elements, so no sub-count can overflow. */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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

static size_t bin_chunk(const float *x, size_t n, float radius, float scale, uint32_t *sub,
                        size_t stride) {
    size_t zeros = 0;
    const float top = (float)(stride - 1); /* exact: bins < 2^24 */
    int32_t idx[BLOCK];
    for (size_t start = 0; start < n; start += BLOCK) {
        size_t len = n - start < BLOCK ? n - start : BLOCK;
        zeros += bins_of(x + start, len, radius, scale, top, idx);
        size_t i = 0;
        for (; i + WAYS <= len; i += WAYS) {
            for (size_t w = 0; w < WAYS; w++) sub[w * stride + (size_t)idx[i + w]]++;
        }
        for (; i < len; i++) sub[(size_t)idx[i]]++;
    }
    return zeros;
}

int mdla_hist_bin(const float *x, size_t n, float radius, float scale, int64_t *counts,
                  size_t bins, int64_t *zeros) {
    if (bins == 0 || bins >= ((size_t)1 << 24)) return -1; /* bins exact in float */
    size_t stride = bins + 1;
    uint32_t *sub = calloc(WAYS * stride, sizeof *sub);
    if (sub == NULL) return -2;
    for (size_t start = 0; start < n; start += CHUNK) {
        size_t len = n - start < CHUNK ? n - start : CHUNK;
        *zeros += (int64_t)bin_chunk(x + start, len, radius, scale, sub, stride);
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
