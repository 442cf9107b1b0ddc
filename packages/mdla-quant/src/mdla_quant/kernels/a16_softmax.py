"""SOFTMAX at 16 bits (int16 in and out, zero point 0), as LiteRT's reference kernel computes it
(reference_ops SoftmaxInt16; its tables made at Prepare in activations.cc).

Output params are fixed: scale 1/32768, zero point 0 (`FIXED_OUTPUT16`). Two 513-entry int16
tables, each 512 segments of a function sampled in double over [lo, hi] with the last entry
only for the slope (`make_table`):

    step = (hi - lo) / 512;  f_i = f(lo + i step) * 32768;  g = f(lo + i step + step / 2) * 32768
    T[i] = clamp(round(f_i) - round((round((f_{i+1} + round(f_i)) / 2) - round(g)) / 2))
    T[512] = clamp(round(f(hi) * 32768))           round: half away from zero; clamp to int16
EXP_TABLE is exp over [-10, 0], RECIPROCAL_TABLE is 1 / (1 + x) over [0, 1]. A table is read
at an int16 v (`lookup`): i = 256 + (v >> 7), t = v & 127, T[i] + ((T[i+1] - T[i]) t + 64) >> 7.

Per row along `axis` (the input multiplier (M, s) = QuantizeMultiplier(beta s_in 65535 / 10),
so that [-65535, 0] spans [-10, 0]):
    e_j = lookup(EXP, clamp16(MBQM(x_j - max x, M, s) + 32767))      Q0.15
    S = sum_j e_j;  c = CountLeadingZeros(S) (uint32)
    r = lookup(RECIPROCAL, clamp16((((S << (c - 1)) + 2^13) >> 14) - 3 * 2^15))
    out_j = clamp((e_j r + 2^(30 - c)) >> (31 - c), 0, 32767)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mdla_ir.attrs import SoftmaxAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, f32, mbqm, quantize_multiplier
from mdla_quant.kernels.a16_common import fixed_output16, int16_arg, kernel16
from mdla_quant.kernels.registry import fail

TABLE_SEGMENTS = 512


def _round(v: float) -> float:
    """TfLiteRound: half away from zero."""
    return math.copysign(math.floor(abs(v) + 0.5), v)


def make_table(func: Callable[[float], float], lo: float, hi: float) -> Array:
    """The 513-entry int16 table of `func` over [lo, hi] (the module header's formula)."""
    step = (hi - lo) / TABLE_SEGMENTS
    table = np.empty(TABLE_SEGMENTS + 1, dtype=np.int64)
    for i in range(TABLE_SEGMENTS):
        here = func(lo + i * step) * 32768.0
        sample = _round(here)
        interpolated = _round((func(lo + (i + 1) * step) * 32768.0 + sample) / 2.0)
        midpoint = _round(func(lo + i * step + step / 2.0) * 32768.0)
        table[i] = min(max(sample - _round((interpolated - midpoint) / 2.0), -32768), 32767)
    table[TABLE_SEGMENTS] = min(max(_round(func(hi) * 32768.0), -32768), 32767)
    return table


EXP_TABLE = make_table(math.exp, -10.0, 0.0)
RECIPROCAL_TABLE = make_table(lambda v: 1.0 / (1.0 + v), 0.0, 1.0)


def lookup(table: Array, v: Array) -> Array:
    """The interpolated read of a 513-entry table at int16 values `v` (int64 in and out)."""
    index, offset = 256 + (v >> 7), v & 127
    base = table[index]
    return np.asarray(base + (((table[index + 1] - base) * offset + 64) >> 7))


def _clamp16(v: Array) -> Array:
    return np.clip(v, -32768, 32767)


def softmax_rows16(x: Array, m: int, s: int, rounding: str) -> Array:
    """The int16 softmax of each last-axis row of int16 codes `x` (int64 out, in [0, 32767])."""
    diff = x - x.max(axis=-1, keepdims=True)
    e = lookup(EXP_TABLE, _clamp16(mbqm(diff, m, s, rounding) + 32767))
    total = e.sum(axis=-1, keepdims=True)  # >= 32767 (the maximum's own term): c in [1, 17]
    c = 32 - np.frexp(total.astype(np.float64))[1].astype(np.int64)
    shifted = ((total << (c - 1)) + (1 << 13)) >> 14
    r = lookup(RECIPROCAL_TABLE, _clamp16(shifted - 3 * (1 << 15)))
    right = 31 - c
    return np.asarray(np.clip((e * r + (np.int64(1) << (right - 1))) >> right, 0, 32767))


def input_multiplier(s_in: float, beta: float, rounding: str) -> tuple[int, int]:
    """QuantizeMultiplier(s_in beta / (10 / 65535)): the product in float32, the ratio double."""
    real = float(f32(s_in) * f32(beta)) / (10.0 / 65535.0)
    m, s = quantize_multiplier(real, rounding)
    return int(m), int(s)


@kernel16(OpKind.SOFTMAX)
def softmax16(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int16_arg(op, args, 0).astype(np.int64)
    s_in = fixed_output16(op, arg_q[0], out_q)
    attrs = SoftmaxAttrs.of(op)
    axis = attrs.axis
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise fail(op, f"axis {axis} is out of range for input shape {x.shape}")
    if x.shape[axis] > 65536:
        raise fail(op, f"rows of {x.shape[axis]} > 65536 elements overflow the int32 exp sum")
    m, s = input_multiplier(float(s_in), float(attrs.beta), rounding)
    rows = np.moveaxis(x, axis, -1)
    return np.moveaxis(softmax_rows16(rows, m, s, rounding), -1, axis).astype(np.int16)
