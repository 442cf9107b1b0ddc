"""FULLY_CONNECTED, int8 (TFLite reference_integer_ops/fully_connected.h).

    acc[..., o] = bias[o] + sum_i w[o, i] * (x[..., i] - z_in)
    double:  out = clamp(round_half_away((double)acc * (s_in * s_w[o] / s_out)) + z_out)
    single:  out = clamp(MBQM_single(acc, M_o, s_o) + z_out)

"double" follows LiteRT 2.3.0's BUILTIN_REF, which since commit 9213607 (2025-04) requantizes
FULLY_CONNECTED in float64 instead of gemmlowp double rounding (the two differ by 1 LSB on a
few outputs in a thousand). The MDLA never runs FC (it is lowered to a 1x1 CONV_2D), so the
reference that the oracle checks wins here. Filter (O, I), per-tensor or per-channel on dim 0.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, f32, round_half_away, saturate
from mdla_quant.kernels.conv import MAX_TAPS, add_bias, check_int32, requantize
from mdla_quant.kernels.registry import activation_range, fail, int8_arg, kernel, per_tensor


@kernel(OpKind.FULLY_CONNECTED)
def fully_connected(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, w = int8_arg(op, args, 0), int8_arg(op, args, 1)
    if w.ndim != 2 or x.shape[-1] != w.shape[1] or w.shape[1] >= MAX_TAPS:
        raise fail(op, f"input {x.shape} does not match filter (O, I) {w.shape}")
    s_in, z_in = per_tensor(op, arg_q[0], "input")
    # Exact: |x - z_in| * |w| < 2^15 per product, I < 2^38 terms (see conv.MAX_TAPS).
    acc = ((x.astype(np.float64) - z_in) @ w.astype(np.float64).T).astype(np.int64)
    if rounding == "single":
        return requantize(op, acc, args, arg_q, out_q, rounding, accumulator)
    o = w.shape[0]
    acc = check_int32(op, add_bias(op, acc, args, o))
    w_q = arg_q[1]
    if w_q is None or any(z != 0 for z in w_q.zero_point) or len(w_q.scale) not in (1, o):
        raise fail(op, f"filter must be symmetric, per-tensor or per-channel on dim 0: {w_q}")
    s_out, z_out = per_tensor(op, out_q, "output")
    real = f32(s_in) * np.broadcast_to(f32(w_q.scale), (o,)) / f32(s_out)
    lo, hi = activation_range(op, out_q)
    return saturate(round_half_away(acc.astype(np.float64) * real).astype(np.int64) + z_out, lo, hi)
