"""PRELU, int8 with alpha broadcast to the input (TFLite reference_ops::BroadcastPrelu4DSlow,
activations.cc PreluPrepare).

Prepare (float32 products, as PreluPrepare computes them, then QuantizeMultiplier):
    (M1, e1) = QM(s_in / s_out)               the identity branch
    (M2, e2) = QM(s_in * s_alpha / s_out)     the alpha branch
Eval:
    v = x - z_in
    v >= 0:  out = MBQM(v, M1, e1) + z_out
    v <  0:  out = MBQM(v * (alpha - z_alpha), M2, e2) + z_out
    out = clamp(out, -128, 127)
|v| <= 255 and |alpha - z_alpha| <= 255: the product is below 2^16, within int32.
A LeakyReLU is PRELU with a one-element constant alpha.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, add_offset, mbqm, quantize_multiplier, saturate
from mdla_quant.kernels.registry import fail, int8_arg, kernel, per_tensor


def prelu_multipliers(
    s_in: np.float32, s_alpha: np.float32, s_out: np.float32, rounding: str
) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
    """((M1, e1), (M2, e2)) from float32 scales, each ratio rounded to float32 first."""
    real1 = np.float32(s_in / s_out)
    real2 = np.float32(np.float32(s_in * s_alpha) / s_out)
    return quantize_multiplier(real1, rounding), quantize_multiplier(real2, rounding)


def prelu_body(
    op: Op,
    x: Array,
    alpha: Array,
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    """The header's out before the final clamp (int64), for int8 or (16x8) int16 codes `x`."""
    (s_in, z_in), (s_a, z_a) = per_tensor(op, arg_q[0], "input"), per_tensor(op, arg_q[1], "alpha")
    s_out, z_out = per_tensor(op, out_q, "output")
    try:
        shape = np.broadcast_shapes(x.shape, alpha.shape)
    except ValueError as exc:
        raise fail(op, f"alpha {alpha.shape} does not broadcast to input {x.shape}") from exc
    if shape != x.shape:
        raise fail(op, f"alpha {alpha.shape} would broadcast input {x.shape} to {shape}")
    (m1, e1), (m2, e2) = prelu_multipliers(s_in, s_a, s_out, rounding)
    v = x.astype(np.int64) - z_in
    a = np.broadcast_to(alpha.astype(np.int64) - z_a, x.shape)
    pos = mbqm(v, m1, e1, rounding, accumulator)
    neg = mbqm(v * a, m2, e2, rounding, accumulator)
    return add_offset(np.where(v >= 0, pos, neg), z_out, accumulator)


@kernel(OpKind.PRELU)
def prelu(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, alpha = int8_arg(op, args, 0), int8_arg(op, args, 1)
    return saturate(prelu_body(op, x, alpha, arg_q, out_q, rounding, accumulator))
