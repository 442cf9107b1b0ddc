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

#include <stddef.h>
#include <stdint.h>

void mdla_balance_kernels(const double *e, int16_t *q, const int64_t *need, size_t rows,
                          size_t n, uint8_t *taken) {
    for (size_t r = 0; r < rows; r++) {
        int64_t k = need[r];
        if (k == 0) continue;
        const double *er = e + r * n;
        int16_t *qr = q + r * n;
        int down = k > 0;
        double sign = down ? 1.0 : -1.0;
        int64_t want = down ? k : -k;
        for (size_t i = 0; i < n; i++) {
            int ok = down ? (qr[i] > -127 && er[i] > 0.0) : (qr[i] < 127 && er[i] < 0.0);
            taken[i] = !ok; /* not a candidate: as if already taken */
        }
        for (int64_t j = 0; j < want; j++) {
            size_t best = n;
            double key = 0.0;
            for (size_t i = 0; i < n; i++) {
                if (taken[i]) continue;
                double v = sign * er[i];
                if (best == n || v > key) best = i, key = v;
            }
            if (best == n) break; /* no candidate left */
            taken[best] = 1;
            if (key > 1.7976931348623157e308) continue; /* +inf: numpy's pick, never taken */
            qr[best] = (int16_t)(qr[best] + (down ? -1 : 1));
        }
    }
}
