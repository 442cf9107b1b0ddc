"""The int8 I/O boundary, defined once: TFLite's QUANTIZE and DEQUANTIZE and C's roundf.

    QUANTIZE    q = clamp((int)roundf(x / s) + z, -128, 127)     (reference/quantize.h)
    DEQUANTIZE  x = s * (q - z)                                  (float32 throughout)

The host owns this boundary (silicon fact 2: QUANTIZE/DEQUANTIZE are not MDLA-resident), so
the runtime, the int8 reference and the quantizer all call these; none restates them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def round_half_away(x: Array | np.generic | int | float) -> Array:
    """C's round()/roundf(): nearest integer, ties away from zero (numpy's rint ties to even).

    Exact in the input's own precision: floor(|x| + 0.5) only rounds when |x| >= 2^52 (float64)
    or 2^23 (float32), where x is already an integer.
    """
    a = np.asarray(x)
    if a.ndim == 0 or a.dtype not in (np.float32, np.float64):
        return np.asarray(np.sign(a) * np.floor(np.abs(a) + a.dtype.type(0.5)))
    out: Array = np.abs(a)  # the same four operations, each after the first into one buffer
    out += a.dtype.type(0.5)
    np.floor(out, out=out)
    np.multiply(np.sign(a), out, out=out)  # (this operand order: a NaN's sign as before)
    return out


def quantize_input(x: Array, scale: np.float32, zero_point: int) -> Array:
    """Float -> int8 QUANTIZE: clamp((int)roundf(x / s) + z) in float32, int64 headroom."""
    q = round_half_away(x.astype(np.float32) / scale)
    wide = np.clip(q, -(2.0**31), 2.0**31 - 1).astype(np.int64) + zero_point
    return np.clip(wide, -128, 127).astype(np.int8)


def dequantize_output(q: Array, scale: float, zero_point: int) -> Array:
    """Int8 -> float DEQUANTIZE: s * (q - z), float32."""
    diff = q.astype(np.float32) - np.float32(zero_point)
    return (np.float32(scale) * diff).astype(np.float32)
