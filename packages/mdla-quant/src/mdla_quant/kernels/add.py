"""ADD and SUB, int8 with numpy broadcasting (TFLite reference_integer_ops/add.h, sub.cc).

Prepare (double precision, from float32 scales), left_shift = 20:
    twice = 2 * max(s1, s2)
    (M1, e1) = QM(s1 / twice), (M2, e2) = QM(s2 / twice)        both <= 0.5: e <= 0
    (Mo, eo) = QM(twice / (2^20 * s_out))
Eval:
    a = MBQM((x1 - z1) * 2^20, M1, e1);  b = MBQM((x2 - z2) * 2^20, M2, e2)
    out = clamp(MBQM(a +- b, Mo, eo) + z_out, act_min, act_max)
|x - z| <= 255, so (x - z) * 2^20 < 2^28 and a +- b < 2^29: all within int32.
The registered kernel looks the formula up in its 256 x 256 table (kernels/tables.py).
"""

from __future__ import annotations

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, add_offset, f32, mbqm, quantize_multiplier, saturate
from mdla_quant.kernels.registry import activation_range, binary_operands, kernel
from mdla_quant.kernels.tables import binary_table

LEFT_SHIFT = 20


def add_sub_formula(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    (x1, s1, z1), (x2, s2, z2), (s_out, z_out) = binary_operands(op, args, arg_q, out_q)
    twice = 2.0 * max(f32(s1), f32(s2))
    m1, e1 = quantize_multiplier(f32(s1) / twice, rounding)
    m2, e2 = quantize_multiplier(f32(s2) / twice, rounding)
    mo, eo = quantize_multiplier(twice / (2.0**LEFT_SHIFT * f32(s_out)), rounding)
    a = mbqm((x1.astype(np.int64) - z1) << LEFT_SHIFT, m1, e1, rounding)
    b = mbqm((x2.astype(np.int64) - z2) << LEFT_SHIFT, m2, e2, rounding)
    raw = a + b if op.kind is OpKind.ADD else a - b
    lo, hi = activation_range(op, out_q)
    out = add_offset(mbqm(raw, mo, eo, rounding, accumulator), z_out, accumulator)
    return saturate(out, lo, hi)


add_sub = kernel(OpKind.ADD, OpKind.SUB)(binary_table(add_sub_formula))
