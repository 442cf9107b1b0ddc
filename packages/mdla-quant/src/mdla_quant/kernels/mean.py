"""MEAN, int8 (TFLite reference/reduce.h QuantizedMeanOrSum; Prepare in reduce.cc).

(M, s) = QuantizeMultiplier(s_in / s_out)                  in double, from float32 scales
n = number of reduced elements;  k = min(floor(log2 n), 32, 31 + s)
M' = floor(M * 2^k / n) (int64);  s' = s - k
out = clamp(MBQM((int32)(sum x - z_in * n), M', s') + z_out)
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import MeanAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, add_offset, f32, mbqm, quantize_multiplier, saturate
from mdla_quant.kernels.registry import fail, kernel, unary_operands


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
    n = int(np.prod([x.shape[a] for a in axes]))
    if n == 0 or n > 2**23:
        raise fail(op, f"{n} reduced elements: need 1 .. 2^23 so that the int32 sum is exact")
    m, s = quantize_multiplier(f32(s_in) / f32(s_out), rounding)
    k = min(n.bit_length() - 1, 32, 31 + int(s))
    m2, s2 = (int(m) << k) // n, int(s) - k  # M < 2^31, k <= 32: the shift fits int64
    # |sum| <= 2^23 * 128 = 2^30: an int32 accumulator is exact (and cheaper than a copy)
    total = x.sum(axis=axes, keepdims=attrs.keepdims, dtype=np.int32).astype(np.int64)
    shifted = total - z_in * n  # |sum| <= 2^23 * 255 < 2^31: the int32 cast is exact
    return saturate(add_offset(mbqm(shifted, m2, s2, rounding, accumulator), z_out, accumulator))
