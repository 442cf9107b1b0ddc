"""TFLite's int8 fixed-point arithmetic, vectorized over numpy int64 arrays.

real multiplier d  ->  (M, s) with d ~= M * 2^(s - 31), M in [2^30, 2^31)   (QuantizeMultiplier)

MultiplyByQuantizedMultiplier (MBQM), in two roundings:

- "double" (gemmlowp; TFLite's reference kernels, the default build):
      MBQM(x, M, s) = RDBPOT(SRDHM(x * 2^max(s,0), M), max(-s,0))
      SRDHM(a, b)   = floor((a*b + 2^30) / 2^31)         round to nearest, ties toward +inf;
                      saturates to 2^31-1 only for a = b = -2^31
      RDBPOT(v, e)  = round(v / 2^e)                      ties away from zero
- "single" (TFLITE_SINGLE_ROUNDING, ruy, XNNPACK-like):
      MBQM(x, M, s) = (x*M + 2^(30-s)) >> (31-s)          one rounding, ties toward +inf

All integer helpers take and return int64 arrays holding int32 values; int64 leaves headroom for
every intermediate product (|x*M| < 2^31 * 2^31 = 2^62).

Where TFLite's int32 would overflow (x * 2^s for a multiplier >= 2, the output offset added to an
extreme value) the target's `accumulator` fact decides (mdla_target `[arith]`):

- "saturate": the int32 value is clamped to [-2^31, 2^31 - 1] first (the emulator's
  historical int64 arithmetic; the sign survives, so the int8 output is the clamp bound)
- "wrap": the value is taken modulo 2^32 as a two's-complement int32, which is what TFLite's
  reference build computes (`x * (1 << left_shift)` and `acc += output_offset` in int32;
  single rounding's `static_cast<int32_t>` of its int64 result)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.affine import round_half_away as round_half_away  # the one definition
from mdla_ir.provenance import ACCUMULATORS, ROUNDINGS
from mdla_quant.errors import QuantError

Array = np.ndarray[Any, Any]
Num = Array | np.generic | int | float  # anything np.asarray turns into an int64/float array
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def check_rounding(rounding: str) -> str:
    if rounding not in ROUNDINGS:
        raise QuantError(f"unknown rounding `{rounding}`: expected one of {ROUNDINGS}")
    return rounding


def check_accumulator(accumulator: str) -> str:
    if accumulator not in ACCUMULATORS:
        raise QuantError(f"unknown accumulator `{accumulator}`: expected one of {ACCUMULATORS}")
    return accumulator


def wrap32(x: Num) -> Array:
    """x modulo 2^32 as a two's-complement int32 (what an int32 register keeps)."""
    return np.asarray(((np.asarray(x, np.int64) + 2**31) & 0xFFFFFFFF) - 2**31)


def sat32(x: Num) -> Array:
    """x clamped to the int32 range."""
    return np.asarray(np.clip(np.asarray(x, np.int64), INT32_MIN, INT32_MAX))


def narrow32(x: Num, accumulator: str) -> Array:
    """An int64 value stored into TFLite's int32: wrapped or saturated, as `accumulator` says."""
    return wrap32(x) if accumulator == "wrap" else sat32(x)


def add_offset(v: Num, z: int, accumulator: str = "saturate") -> Array:
    """MBQM's result plus the output zero point: TFLite's `acc += output_offset` in int32.

    Under "saturate" the sum stays exact in int64 (the int8 clamp that follows gives what a
    saturated int32 would); under "wrap" it wraps as TFLite's int32 does."""
    out = np.asarray(v, np.int64) + z
    return wrap32(out) if accumulator == "wrap" else out


def f32(scale: Any) -> Array:
    """Scales as the device stores them (float32), widened to float64 for multiplier math."""
    return np.asarray(scale, dtype=np.float32).astype(np.float64)


def quantize_multiplier(real: Num, rounding: str = "double") -> tuple[Array, Array]:
    """QuantizeMultiplier: d = q * 2^s with q in [0.5, 1) (frexp), M = round(q * 2^31).

    M = 2^31 becomes (2^30, s+1); s < -31 flushes to (0, 0); d = 0 gives (0, 0); the
    single-rounding build also caps s > 30 at (2^31 - 1, 30). Returns int64 arrays (M, s).
    """
    d = np.asarray(real, dtype=np.float64)
    if np.any(d < 0) or not np.all(np.isfinite(d)):
        raise QuantError(f"real multiplier must be finite and >= 0, got {d}")
    q, s = np.frexp(d)
    m = round_half_away(q * 2.0**31).astype(np.int64)  # q * 2^31 is exact: a power-of-2 scaling
    s = s.astype(np.int64)
    carry = m == 2**31
    m, s = np.where(carry, 2**30, m), np.where(carry, s + 1, s)
    flush = (s < -31) | (d == 0)
    m, s = np.where(flush, 0, m), np.where(flush, 0, s)
    if rounding == "single":
        big = s > 30
        m, s = np.where(big, INT32_MAX, m), np.where(big, 30, s)
    return m, s


def srdhm(a: Num, b: Num) -> Array:
    """SaturatingRoundingDoublingHighMul: floor((a*b + 2^30) / 2^31), int32 in and out.

    |a*b| <= 2^62, so a*b + 2^30 fits int64; the only overflow (a = b = -2^31) saturates.
    """
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    out = (a * b + 2**30) >> 31
    return np.asarray(np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, out))


def rdbpot(v: Num, exponent: Num) -> Array:
    """RoundingDivideByPOT: v / 2^e rounded to nearest, ties away from zero (e in [0, 31]).

    mask = 2^e - 1, rem = v & mask, thr = (mask >> 1) + (v < 0), out = (v >> e) + (rem > thr).
    """
    v, e = np.asarray(v, np.int64), np.asarray(exponent, np.int64)
    mask = (np.int64(1) << e) - 1
    rem = v & mask
    thr = (mask >> 1) + (v < 0)
    return np.asarray((v >> e) + (rem > thr))


def mbqm(x: Num, m: Num, s: Num, rounding: str = "double", accumulator: str = "saturate") -> Array:
    """MultiplyByQuantizedMultiplier(x, M, s) ~= x * M * 2^(s-31), int32 values in int64.

    `m` and `s` broadcast against `x` (per-channel multipliers on the last axis, say). `x` is
    TFLite's int32 input, narrowed by `accumulator` (the caller's int64 sum stored into int32):
    double:  v = narrow32(x * 2^max(s,0));  out = RDBPOT(SRDHM(v, M), max(-s,0))
             |x| <= 2^31 and s <= 31 keep x * 2^s below 2^62 before narrowing; s > 0 only
             where the multiplier is >= 1, and then max(-s,0) = 0
    single:  out = (x*M + 2^(30-s)) >> (31-s), in int64 (x*M < 2^62, rounding term < 2^61),
             then wrapped to int32 under "wrap" (TFLite casts the int64 result to int32)
    """
    x = narrow32(x, accumulator)
    m, s = np.asarray(m, np.int64), np.asarray(s, np.int64)
    if rounding == "single":
        total = 31 - s  # in [1, 62]
        out = np.asarray((x * m + (np.int64(1) << (total - 1))) >> total)
        return wrap32(out) if accumulator == "wrap" else out
    left, right = np.maximum(s, 0), np.maximum(-s, 0)
    return rdbpot(srdhm(narrow32(x << left, accumulator), m), right)


def saturate(x: Array, lo: int = -128, hi: int = 127) -> Array:
    """Clamp to [lo, hi] and narrow to int8."""
    return np.clip(x, lo, hi).astype(np.int8)


def mbqm64(x: Num, m: Num, s: Num) -> Array:
    """MultiplyByQuantizedMultiplier's int64-input overload (TFLite common.h; the 16x8 convs):

        M16 = (M + 2^15) >> 16, or 0x7FFF when M >= 0x7FFF0000      (the multiplier to 16 bits)
        out = (x * M16 + 2^(14 - s)) >> (15 - s)                     one rounding, ties to +inf

    then the int32 cast. TFLite asserts |x| < 2^47 and s in [-31, 7], which keeps x * M16 below
    2^62; both builds (double and single rounding) use this same overload."""
    x, m, s = np.asarray(x, np.int64), np.asarray(m, np.int64), np.asarray(s, np.int64)
    m16 = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - s
    return wrap32((x * m16 + (np.int64(1) << (total - 1))) >> total)


def saturate16(x: Array, lo: int = -32768, hi: int = 32767) -> Array:
    """Clamp to [lo, hi] and narrow to int16."""
    return np.clip(x, lo, hi).astype(np.int16)
