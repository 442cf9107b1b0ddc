/*
 * arith.h: TFLite's int8 fixed-point arithmetic, the one definition every kernel uses.
 * (The same formulas as mdla_quant/arith.py, computed in int64 exactly as numpy does.)
 *
 *   real multiplier d  ->  (M, s), d ~= M * 2^(s - 31), M in [2^30, 2^31)   (QuantizeMultiplier)
 *   double (gemmlowp, TFLite reference build):
 *       MBQM(x, M, s) = RDBPOT(SRDHM(x * 2^max(s,0), M), max(-s,0))
 *       SRDHM(a, b)   = floor((a*b + 2^30) / 2^31)     ties toward +inf; saturates for a=b=-2^31
 *       RDBPOT(v, e)  = round(v / 2^e)                  ties away from zero
 *   single (TFLITE_SINGLE_ROUNDING):
 *       MBQM(x, M, s) = (x*M + 2^(30-s)) >> (31-s)      one rounding, ties toward +inf
 *
 * Right shifts of negative int64 are arithmetic on every compiler this builds with (gcc, clang;
 * C11 leaves it implementation-defined); overflow bounds are noted beside each helper.
 *
 * Where TFLite's int32 overflows (x * 2^s for a multiplier >= 2; the output offset added to an
 * extreme value) the target's `[arith] accumulator` fact decides, as in mdla_quant/arith.py:
 * saturate (clamp to int32 first) or wrap (modulo 2^32, what TFLite's reference build computes).
 */
#ifndef MDLA_EMU_ARITH_H
#define MDLA_EMU_ARITH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define EMU_INT32_MIN (-2147483647 - 1)
#define EMU_INT32_MAX 2147483647

/* floor(x / 2^e) for int64 (an arithmetic right shift). */
static inline int64_t emu_asr(int64_t x, int e) { return x >> e; }

/* QuantizeMultiplier: d = q * 2^s, q in [0.5, 1); M = round(q * 2^31); carry, flush, cap.
 * d = 0 and tiny d (s < -31) flush to (0, 0) as TFLite does; the single-rounding build caps
 * s = 31 at (2^31 - 1, 30) as TFLite's does. False, with (0, 0), for a multiplier no int32
 * pipeline represents: NaN, negative, infinite, or s > 31 (d >= 2^31, more than any int32
 * shift: TFLite shifts an int32 by s). Kernels fail prepare with NEURON_BAD_DATA on false: an
 * output scale of 1e-38 is bad data, never a shift by 118. So s is in [-31, 31] in double
 * rounding (31 only where TFLite allows it: SOFTMAX's beta multiplier) and [-31, 30] in single. */
static inline bool emu_quantize_multiplier(double d, int rounding, int64_t *m, int *s) {
    *m = 0;
    *s = 0;
    if (d == 0.0) return true;
    if (!(d > 0.0) || !isfinite(d)) return false;
    int e = 0;
    double q = frexp(d, &e);
    int64_t mm = (int64_t)round(q * 2147483648.0); /* exact: q * 2^31 < 2^31; C round = away */
    if (mm == 2147483648LL) {
        mm = 1073741824LL;
        e += 1;
    }
    if (e > 31) return false;
    if (e < -31) return true; /* flushed: (0, 0) */
    if (rounding == 1 && e > 30) {
        mm = EMU_INT32_MAX;
        e = 30;
    }
    *m = mm;
    *s = e;
    return true;
}

/* Saturation to int32, where TFLite's int32 arithmetic would overflow (undefined behaviour
 * there; the saturated value keeps the sign, and every caller clamps to int8 afterwards). */
static inline int64_t emu_sat32(int64_t v) {
    return v < EMU_INT32_MIN ? EMU_INT32_MIN : (v > EMU_INT32_MAX ? EMU_INT32_MAX : v);
}

/* SRDHM over int64 holding int32-range values: |a*b| <= 2^62, + 2^30 fits int64. */
static inline int64_t emu_srdhm(int64_t a, int64_t b) {
    if (a == EMU_INT32_MIN && b == EMU_INT32_MIN) return EMU_INT32_MAX;
    return emu_asr(a * b + (INT64_C(1) << 30), 31);
}

/* RDBPOT: mask = 2^e - 1, rem = v & mask, thr = (mask >> 1) + (v < 0), (v >> e) + (rem > thr). */
static inline int64_t emu_rdbpot(int64_t v, int e) {
    const int64_t mask = (INT64_C(1) << e) - 1;
    const int64_t rem = (int64_t)((uint64_t)v & (uint64_t)mask);
    const int64_t thr = (mask >> 1) + (v < 0 ? 1 : 0);
    return emu_asr(v, e) + (rem > thr ? 1 : 0);
}

/* v modulo 2^32 as a two's-complement int32 (gcc and clang convert uint32 to int32 modulo
 * 2^32, as numpy's int64 -> int32 narrowing does). */
static inline int64_t emu_wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

/* An int64 value stored into TFLite's int32, as the accumulator fact says. */
static inline int64_t emu_narrow32(int64_t v, bool wrap) {
    return wrap ? emu_wrap32(v) : emu_sat32(v);
}

/* MBQM(x, M, s) in the chosen rounding, (M, s) from emu_quantize_multiplier. x and
 * x * 2^max(s,0) are TFLite's int32 values, narrowed to int32 (wrapped or saturated) where
 * TFLite's would overflow (then |x * 2^31| <= 2^62 and |a*M| < 2^62: nothing overflows int64).
 * Single rounding computes in int64 and TFLite casts the result to int32: wrapped under wrap. */
static inline int64_t emu_mbqm_acc(int64_t x, int64_t m, int s, int rounding, bool wrap) {
    x = emu_narrow32(x, wrap);
    if (rounding == 1) {
        const int total = 31 - s; /* in [1, 62]: x*M < 2^62, the rounding term < 2^61 */
        const int64_t r = emu_asr(x * m + (INT64_C(1) << (total - 1)), total);
        return wrap ? emu_wrap32(r) : r;
    }
    const int left = s > 0 ? s : 0, right = s > 0 ? 0 : -s;
    return emu_rdbpot(emu_srdhm(emu_narrow32(x * (INT64_C(1) << left), wrap), m), right);
}

/* MBQM with the saturating accumulator (the ops whose int32 values cannot overflow). */
static inline int64_t emu_mbqm(int64_t x, int64_t m, int s, int rounding) {
    return emu_mbqm_acc(x, m, s, rounding, false);
}

/* MBQM's result plus the output zero point, TFLite's `acc += output_offset` in int32: exact
 * in int64 under saturate (the int8 clamp after it gives what a saturated int32 would),
 * wrapped under wrap. */
static inline int64_t emu_add_offset(int64_t v, int32_t z, bool wrap) {
    return wrap ? emu_wrap32(v + z) : v + z;
}

static inline int32_t emu_clamp(int64_t v, int32_t lo, int32_t hi) {
    return v < lo ? lo : (v > hi ? hi : (int32_t)v);
}

/* numpy's round_half_away: sign(x) * floor(|x| + 0.5), in the operand's own precision. */
static inline double emu_round_away(double x) {
    const double r = floor(fabs(x) + 0.5);
    return x > 0 ? r : (x < 0 ? -r : 0.0);
}
static inline float emu_round_awayf(float x) {
    const float r = floorf(fabsf(x) + 0.5f);
    return x > 0 ? r : (x < 0 ? -r : 0.0f);
}

/* Q(f) = z + (int)roundf(f / s) in float32, for a clamp bound: f / s is saturated to +-2^16
 * before the conversion (a tiny scale such as FLT_MIN makes 6 / s infinite, which no int
 * holds); the bound is clamped to [-128, 127] after, where +-2^16 acts as +-inf does. */
static inline int32_t emu_quantize_bound(float f, float scale, int32_t zp) {
    float r = emu_round_awayf(f / scale);
    if (!(r >= -65536.0f)) r = -65536.0f; /* NaN too (a zero scale, rejected earlier) */
    if (r > 65536.0f) r = 65536.0f;
    return zp + (int32_t)r;
}

/* CalculateActivationRangeQuantized: Q(f) = z + (int)roundf(f / s) in float32.
 * fuse NONE [-128,127]; RELU [max(-128,Q(0)),127]; RELU1 [max(-128,Q(-1)),min(127,Q(1))];
 * RELU6 [max(-128,Q(0)),min(127,Q(6))]. */
static inline void emu_activation_range(int32_t fuse, float scale, int32_t zp, int32_t *lo,
                                        int32_t *hi) {
    const int32_t q0 = emu_quantize_bound(0.0f, scale, zp);
    *lo = -128;
    *hi = 127;
    if (fuse == 1) {
        *lo = q0 > -128 ? q0 : -128;
    } else if (fuse == 2) {
        const int32_t qm1 = emu_quantize_bound(-1.0f, scale, zp);
        const int32_t q1 = emu_quantize_bound(1.0f, scale, zp);
        *lo = qm1 > -128 ? qm1 : -128;
        *hi = q1 < 127 ? q1 : 127;
    } else if (fuse == 3) {
        const int32_t q6 = emu_quantize_bound(6.0f, scale, zp);
        *lo = q0 > -128 ? q0 : -128;
        *hi = q6 < 127 ? q6 : 127;
    }
}

/* CalculateActivationRangeQuantized over [-32768, 32767], zero point 0. */
static inline void emu_activation_range16(int32_t fuse, float scale, int32_t *lo, int32_t *hi) {
    const int32_t q0 = emu_quantize_bound(0.0f, scale, 0);
    *lo = -32768;
    *hi = 32767;
    if (fuse == 1 || fuse == 3) *lo = q0 > -32768 ? q0 : -32768;
    if (fuse == 2) {
        const int32_t qm1 = emu_quantize_bound(-1.0f, scale, 0);
        *lo = qm1 > -32768 ? qm1 : -32768;
    }
    const int32_t top = fuse == 2 ? emu_quantize_bound(1.0f, scale, 0)
                                  : (fuse == 3 ? emu_quantize_bound(6.0f, scale, 0) : 32767);
    *hi = top < 32767 ? top : 32767;
}

#endif /* MDLA_EMU_ARITH_H */
