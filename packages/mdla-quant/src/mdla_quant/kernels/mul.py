"""MUL, int8 with numpy broadcasting (TFLite reference_integer_ops/mul.h).

    (M, s) = QuantizeMultiplier(s1 * s2 / s_out)                in double, from float32 scales
    out = clamp(MBQM((x1 - z1) * (x2 - z2), M, s) + z_out, act_min, act_max)
|x - z| <= 255, so the product is below 2^16 and x * 2^s stays within int32 for s <= 15.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, f32, mbqm, quantize_multiplier, saturate
from mdla_quant.kernels.registry import activation_range, fail, int8_arg, kernel, per_tensor


@kernel(OpKind.MUL)
def mul(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, rounding: str
) -> Array:
    x1, x2 = int8_arg(op, args, 0), int8_arg(op, args, 1)
    (s1, z1), (s2, z2) = per_tensor(op, arg_q[0], "input 0"), per_tensor(op, arg_q[1], "input 1")
    s_out, z_out = per_tensor(op, out_q, "output")
    try:
        np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError as exc:
        raise fail(op, f"shapes {x1.shape} and {x2.shape} do not broadcast") from exc
    m, s = quantize_multiplier(f32(s1) * f32(s2) / f32(s_out), rounding)
    prod = (x1.astype(np.int64) - z1) * (x2.astype(np.int64) - z2)
    lo, hi = activation_range(op, out_q)
    return saturate(mbqm(prod, m, s, rounding) + z_out, lo, hi)
