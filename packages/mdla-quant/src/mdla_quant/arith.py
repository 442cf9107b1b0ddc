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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.affine import round_half_away as round_half_away  # the one definition
from mdla_quant.errors import QuantError

Array = np.ndarray[Any, Any]
Num = Array | np.generic | int | float  # anything np.asarray turns into an int64/float array
ROUNDINGS = ("double", "single")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def check_rounding(rounding: str) -> str:
    if rounding not in ROUNDINGS:
        raise QuantError(f"unknown rounding `{rounding}`: expected one of {ROUNDINGS}")
    return rounding


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


def mbqm(x: Num, m: Num, s: Num, rounding: str = "double") -> Array:
    """MultiplyByQuantizedMultiplier(x, M, s) ~= x * M * 2^(s-31), int32 values in int64.

    `m` and `s` broadcast against `x` (per-channel multipliers on the last axis, say). Callers
    keep |x * 2^max(s,0)| < 2^31, as TFLite requires of its int32 arithmetic.
    """
    x, m, s = np.asarray(x, np.int64), np.asarray(m, np.int64), np.asarray(s, np.int64)
    if rounding == "single":
        total = 31 - s  # in [1, 62]; x*M < 2^62 and the rounding term < 2^61: no overflow
        return np.asarray((x * m + (np.int64(1) << (total - 1))) >> total)
    left, right = np.maximum(s, 0), np.maximum(-s, 0)
    return rdbpot(srdhm(x << left, m), right)


def saturate(x: Array, lo: int = -128, hi: int = 127) -> Array:
    """Clamp to [lo, hi] and narrow to int8."""
    return np.clip(x, lo, hi).astype(np.int8)
