/* The `kernel` step of the data-aware weight roundings (mdla_quant.weight_fit._balance_kernels)
   in one pass over the rows, for the flips numpy picked one argmax over every row at a time.

   Row r holds one kernel's n rounding errors e = q - x (float64) and its int8 codes q (int16
   here); need[r] = round(sum e), computed by the caller. need > 0: the need largest e among
   the elements with q > -127 and e > 0 step down by one; need < 0: the -need largest -e among
   those with q < 127 and e < 0 step up. Equal keys go to the lower index first, and a row
   with fewer candidates than it needs flips what it has: numpy's repeated argmax (its first
   maximum) over keys where the others are -inf, each pick then set to -inf (an infinite e is picked
   first and not flipped, as numpy's isfinite test refuses it). Only comparisons
   of the given values: the same codes as numpy's, bit for bit. `taken` is n bytes of scratch. */

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "lanes.h"

/* The numpy sum numpy's add.reduce takes along a contiguous row of n float64 (its pairwise
   summation: below 8 one running sum from 0, up to 128 eight running sums added as a tree, the
   rest added one by one, above 128 the two halves at a multiple of 8), so a row's sum here is
   e.sum(1)'s value bit for bit. */
static double pairwise_sum(const double *a, size_t n) {
    if (n < 8) {
        double res = 0.0;
        for (size_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = a[j];
        size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* The flips of one row with need != 0 (the file's first comment), by selects instead of
   branches: a candidate's key is > 0 (a NaN is none), so the first strictly larger key from 0
   is numpy's first maximum; an infinite key is picked and not flipped. */
static void flip_row(const double *e, int16_t *q, int64_t need, size_t n, uint8_t *taken) {
    const int down = need > 0;
    const double sign = down ? 1.0 : -1.0;
    const int16_t step = down ? -1 : 1;
    const int64_t want = down ? need : -need;
    if (want == 1) { /* the usual case: one pass, the candidates tested in it */
        size_t best = n;
        double key = 0.0;
        for (size_t i = 0; i < n; i++) {
            double v = sign * e[i];
            int take = (down ? q[i] > -127 : q[i] < 127) & (v > key);
            best = take ? i : best;
            key = take ? v : key;
        }
        if (best < n && key <= DBL_MAX) q[best] = (int16_t)(q[best] + step);
        return;
    }
    for (size_t i = 0; i < n; i++)
        taken[i] = !(down ? (q[i] > -127 && e[i] > 0.0) : (q[i] < 127 && e[i] < 0.0));
    for (int64_t j = 0; j < want; j++) {
        size_t best = n;
        double key = 0.0;
        for (size_t i = 0; i < n; i++) {
            double v = sign * e[i];
            int take = !taken[i] & (v > key);
            best = take ? i : best;
            key = take ? v : key;
        }
        if (best == n) break; /* no candidate left */
        taken[best] = 1;
        if (key <= DBL_MAX) q[best] = (int16_t)(q[best] + step);
    }
}

/* Codes and errors of count weights src[k * sk] at scale s (mdla_fit_kernels_f32); 1 if a
   quotient is not finite. */
static inline __attribute__((always_inline)) int codes(const float *restrict src, ptrdiff_t sk,
                                                       size_t count, double s,
                                                       int16_t *restrict q, double *restrict e) {
    int bad = 0;
    for (size_t k = 0; k < count; k++) {
        double x = (double)src[(ptrdiff_t)k * sk] / s;
        double a = fabs(x);
        bad |= !(a <= DBL_MAX);
        /* floor(a + 0.5) clipped to 127, as a truncation (a + 0.5 > 0): floor() itself does
           not vectorize unless traps are assumed away */
        double t = a + 0.5;
        t = t < 128.0 ? t : 128.0;
        int32_t m = (int32_t)t;
        m = m > 127 ? 127 : m;
        int32_t c = x < 0.0 ? -m : m;
        q[k] = (int16_t)c;
        e[k] = (double)c - x;
    }
    return bad;
}

/* One output channel's quotients, codes and errors (the first half of mdla_fit_kernels_f32's
   loop), an AVX2 clone where the CPU has one: its division, comparisons and truncation in
   lanes are the scalar ones, so the same values; resnet18's 3x3x512 layer 15.2 -> 6.4 ms
   without flips (Zen 3). Returns 1 if a quotient is not finite. */
MDLA_CLONES
int mdla_fit_codes_f32(const float *w, ptrdiff_t sk, ptrdiff_t sn, size_t kernels, size_t n,
                         double s, size_t ld, double *restrict e, int16_t *restrict q) {
    int bad = 0;
    for (size_t j = 0; j < n; j++) {
        const float *src = w + (ptrdiff_t)j * sn;
        double *ej = e + j * ld;
        int16_t *qj = q + j * ld;
        if (sk == 1) /* a conv's or a dense layer's kernels: contiguous, in lanes */
            bad |= codes(src, 1, kernels, s, qj, ej);
        else
            bad |= codes(src, sk, kernels, s, qj, ej);
    }
    return bad;
}

/* weight_fit.fit_weights' `kernel` step from the float32 weights in one pass, for what numpy
   does in five (the float64 quotients, the codes, the errors, their sums, the flips): per row
   (output channel o, kernel k) of the units view w[o * so + k * sk + j * sn] (element strides),
   x = float64(w) / scale[o * sscale], q = clip(round_half_away(x), -127, 127) (quantize_weights'
   codes: sign(x) * floor(|x| + 0.5)), e = q - x, need = round_half_away(pairwise sum of e), then
   mdla_balance_kernels' flips when `flips` (n > 1 in weight_fit.balanced). The codes go to
   out[(o * kernels + k) * n + j]. The same IEEE operations as numpy in the same order: its
   codes bit for bit. Returns 1 (`out` partly written) if an x is not finite, which numpy would
   carry as a NaN or an infinity into its casts: the caller then takes numpy's path.

   One output channel at a time: its quotients, codes and errors first, along the kernels (the
   weights' contiguous axis in a conv's (O, KH, KW, I)), in lanes; then each kernel's row, from
   scratch `e` and `q` ((kernels + 8) * n each, laid out j-major) into `row_e`, `row_q` (n
   each) and `taken` (n bytes). The rows are one baseline build: an AVX2 clone made them 1.7x
   slower (resnet18's 3x3x512 layers, Zen 3); the quotients are cloned (mdla_fit_codes_f32). */
int mdla_fit_kernels_f32(const float *w, ptrdiff_t so, ptrdiff_t sk, ptrdiff_t sn, size_t outs,
                         size_t kernels, size_t n, const double *scale, ptrdiff_t sscale,
                         int flips, int8_t *out, double *restrict e, int16_t *restrict q,
                         double *restrict row_e, int16_t *restrict row_q, uint8_t *taken) {
    const size_t ld = kernels + 8; /* not a multiple of 4 KiB apart: a row's n loads would
                                      all fall in one set of the L1 cache */
    for (size_t o = 0; o < outs; o++) {
        const double s = scale[(ptrdiff_t)o * sscale];
        if (mdla_fit_codes_f32(w + (ptrdiff_t)o * so, sk, sn, kernels, n, s, ld, e, q)) return 1;
        for (size_t k = 0; k < kernels; k++) {
            for (size_t j = 0; j < n; j++) row_e[j] = e[j * ld + k], row_q[j] = q[j * ld + k];
            if (flips) {
                double sum = pairwise_sum(row_e, n);
                int64_t need = (int64_t)copysign(floor(fabs(sum) + 0.5), sum);
                if (need != 0) flip_row(row_e, row_q, need, n, taken);
            }
            int8_t *dst = out + (o * kernels + k) * n;
            for (size_t j = 0; j < n; j++) dst[j] = (int8_t)row_q[j];
        }
    }
    return 0;
}

void mdla_balance_kernels(const double *e, int16_t *q, const int64_t *need, size_t rows,
                          size_t n, uint8_t *taken) {
    for (size_t r = 0; r < rows; r++)
        if (need[r] != 0) flip_row(e + r * n, q + r * n, need[r], n, taken);
}
