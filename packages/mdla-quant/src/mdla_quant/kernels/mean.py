"""MEAN, int8 (TFLite reference/reduce.h QuantizedMeanOrSum; Prepare in reduce.cc).

(M, s) = QuantizeMultiplier(s_in / s_out)                  in double, from float32 scales
n = number of reduced elements;  k = min(floor(log2 n), 32, 31 + s)
M' = floor(M * 2^k / n) (int64);  s' = s - k
out = clamp(MBQM((int32)(sum x - z_in * n), M', s') + z_out)

The MBQM, offset and clamp run as the convolutions' fused requantization (`requant.Requant`,
built once per parameter set: `mean_requant`) where its exactness conditions hold, with the
raw sum r = sum x, the offset -z_in * n and the bounds |r| <= 128 n, |r - z_in n| <=
n * max|x - z_in|; the definition runs otherwise. A squeeze-excite MEAN's output is one
vector of C values, on which the definition's ~25 int64 numpy calls are fixed costs.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from mdla_ir.attrs import MeanAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, add_offset, f32, mbqm, quantize_multiplier, saturate
from mdla_quant.kernels.registry import fail, kernel, unary_operands
from mdla_quant.kernels.requant import Requant

FLOAT32_EXACT = 2**24


@kernel(OpKind.MEAN)
def mean(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, (s_in, z_in), (s_out, z_out) = unary_operands(op, args, arg_q, out_q)
    attrs = MeanAttrs.of(op)
    axes = tuple(sorted({a % x.ndim for a in attrs.axes})) if x.ndim else ()
    if not axes:
        raise fail(op, f"axes {attrs.axes} reduce nothing of shape {x.shape}")
    n = math.prod(x.shape[a] for a in axes)
    if n == 0 or n > 2**23:
        raise fail(op, f"{n} reduced elements: need 1 .. 2^23 so that the int32 sum is exact")
    m2, s2 = mean_multiplier(s_in, s_out, n, rounding)
    total = code_sum(x, axes, attrs.keepdims)
    rq = mean_requant(m2, s2, z_in, n, z_out, rounding, accumulator)
    if rq is not None and total.size:
        out = np.empty(total.shape, np.int8)
        flat = (1, total.size)
        scratch = (np.empty(flat, np.int64), np.empty(flat, np.int32), np.empty(flat, np.int32))
        rq.tiled(total.size).apply(total.reshape(flat), out.reshape(flat), scratch)
        return out
    shifted = total - z_in * n  # |sum| <= 2^23 * 255 < 2^31: the int32 cast is exact
    return saturate(add_offset(mbqm(shifted, m2, s2, rounding, accumulator), z_out, accumulator))


@lru_cache(maxsize=1024)
def mean_multiplier(s_in: np.float32, s_out: np.float32, n: int, rounding: str) -> tuple[int, int]:
    """(M', s') of the module docstring for n reduced elements (a pure function of its
    arguments, so computed once per distinct set)."""
    m, s = quantize_multiplier(f32(s_in) / f32(s_out), rounding)
    k = min(n.bit_length() - 1, 32, 31 + int(s))
    return (int(m) << k) // n, int(s) - k  # M < 2^31, k <= 32: the shift fits int64


@lru_cache(maxsize=1024)
def mean_requant(
    m2: int, s2: int, z_in: int, n: int, z_out: int, rounding: str, accumulator: str
) -> Requant | None:
    """The fused requantization of one MEAN (module docstring), one channel: every output
    shares (M', s'), so `Requant.tiled` repeats it over the outputs; None where it declines."""
    one = np.ones(1, np.int64)
    bound = n * max(z_in + 128, 127 - z_in)  # |x - z_in| <= that, n of them
    return Requant.build(
        one * m2,
        one * s2,
        one * (-z_in * n),
        one * bound,
        one * (128 * n),
        rounding,
        z_out,
        (-128, 127),
        accumulator,
    )


def code_sum(x: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
    """sum x over `axes` (int8 codes, n of them per output, n <= 2^23), int64.

    The spatial mean of an NHWC map (axes (1, 2)) is a float32 product with a row of ones,
    ones(1, H*W) @ x(H*W, C), where 128 * H*W <= 2^24: every partial sum, in whatever order
    and blocking the BLAS adds them, is an integer of magnitude at most 128 * H*W, so each
    is a float32 and no addition (or fused multiply-add of 1 * x) rounds; the result is the
    exact sum. Otherwise (or for codes other than int8, whose bound this is not) an int32
    accumulator (|sum| <= 2^23 * 128 = 2^30: exact)."""
    spatial = axes == (1, 2) and x.ndim == 4 and x.dtype == np.int8
    if spatial and 128 * x.shape[1] * x.shape[2] <= FLOAT32_EXACT:
        b, h, w, c = x.shape
        rows = np.ascontiguousarray(x).reshape(b, h * w, c).astype(np.float32)
        total: Array = np.matmul(np.ones((1, h * w), np.float32), rows)  # (b, 1, c)
        return total.astype(np.int64).reshape((b, 1, 1, c) if keepdims else (b, c))
    sums: Array = x.sum(axis=axes, keepdims=keepdims, dtype=np.int32)
    return sums.astype(np.int64)
