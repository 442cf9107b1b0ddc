"""AVERAGE_POOL_2D and MAX_POOL_2D, int8 and int16 (TFLite reference_integer_ops/pooling.h).

Input and output share scale and zero point, so neither pool requantizes.

    AVERAGE: acc = sum of the raw taps inside the image, n = their count (padding excluded)
             out = clamp(acc > 0 ? (acc + n/2) / n : (acc - n/2) / n, act_min, act_max)
             (C truncating division: round half away from zero)
    MAX:     out = clamp(max of the taps inside the image, act_min, act_max)
Each body serves a `Width`: int8's here, int16's (zero point 0) in `a16_ops`.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import PoolAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import (
    INT8,
    Width,
    fail,
    for_width,
    kernel,
    spatial_pad,
    windows,
)


def _geometry(op: Op, x: Array) -> tuple[tuple[int, int], tuple[int, int], tuple[int, ...]]:
    if x.ndim != 4:
        raise fail(op, f"input must be NHWC, got shape {x.shape}")
    a = PoolAttrs.of(op)
    (kh, kw), (sh, sw), padding = a.kernel, a.stride, a.padding
    t, b, left, r = padding
    if (
        x.shape[1] + t + b < kh
        or x.shape[2] + left + r < kw
        or max(t, b) >= kh
        or max(left, r) >= kw
    ):
        raise fail(op, f"window {kh}x{kw} with padding {padding} does not fit input {x.shape}")
    return (kh, kw), (sh, sw), padding


def average_pool_body(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, width: Width
) -> Array:
    x = width.arg(op, args, 0)
    width.same(op, arg_q[0], out_q, "input")
    kernel_hw, stride, padding = _geometry(op, x)
    # |acc| <= 2^15 * KH * KW: int64 is exact for any window.
    acc = windows(spatial_pad(x.astype(np.int64), padding, 0), kernel_hw, stride).sum(axis=(4, 5))
    inside = spatial_pad(np.ones((1, x.shape[1], x.shape[2], 1), np.int64), padding, 0)
    n = windows(inside, kernel_hw, stride).sum(axis=(4, 5))
    avg = np.sign(acc) * ((np.abs(acc) + n // 2) // n)  # == C's (acc +- n/2) / n
    return width.narrow(avg, *width.clamp_range(op, out_q))


def max_pool_body(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, width: Width
) -> Array:
    x = width.arg(op, args, 0)
    width.same(op, arg_q[0], out_q, "input")
    kernel_hw, stride, padding = _geometry(op, x)
    # Padding with the type's minimum never wins: every window holds a real tap (checked above).
    xp = spatial_pad(x, padding, width.lowest)
    top = windows(xp, kernel_hw, stride).max(axis=(4, 5)).astype(np.int64)
    return width.narrow(top, *width.clamp_range(op, out_q))


average_pool_2d = kernel(OpKind.AVERAGE_POOL_2D)(for_width(average_pool_body, INT8))
max_pool_2d = kernel(OpKind.MAX_POOL_2D)(for_width(max_pool_body, INT8))
