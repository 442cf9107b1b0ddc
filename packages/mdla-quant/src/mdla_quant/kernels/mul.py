"""MUL, int8 with numpy broadcasting (TFLite reference_integer_ops/mul.h).

    (M, s) = QuantizeMultiplier(s1 * s2 / s_out)       in float32, then widened to double
(LiteRT's mul.cc Prepare: `double real = in1->scale * in2->scale / out->scale` multiplies and
divides the float32 scales in float32; where the float32 product rounds, a float64 evaluation
can land on the other side of a power of two: a shift one apart.)
    out = clamp(MBQM((x1 - z1) * (x2 - z2), M, s) + z_out, act_min, act_max)
|x - z| <= 255, so the product is below 2^16 and x * 2^s stays within int32 for s <= 15.
The registered kernel looks the formula up in its 256 x 256 table (kernels/tables.py).
"""

from __future__ import annotations

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, add_offset, mbqm, quantize_multiplier, saturate
from mdla_quant.kernels.registry import activation_range, binary_operands, kernel
from mdla_quant.kernels.tables import binary_table


def mul_formula(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    (x1, s1, z1), (x2, s2, z2), (s_out, z_out) = binary_operands(op, args, arg_q, out_q)
    real = np.float32(s1 * s2) / s_out  # float32 throughout (the scales are np.float32)
    m, s = quantize_multiplier(real, rounding)
    prod = (x1.astype(np.int64) - z1) * (x2.astype(np.int64) - z2)
    lo, hi = activation_range(op, out_q)
    out = add_offset(mbqm(prod, m, s, rounding, accumulator), z_out, accumulator)
    return saturate(out, lo, hi)


mul = kernel(OpKind.MUL)(binary_table(mul_formula))
