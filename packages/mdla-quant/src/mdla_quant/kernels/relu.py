"""RELU and RELU6 as standalone int8 ops (TFLite activations.cc QuantizedReluX, ReluX).

(M, s) = QuantizeMultiplier((double)(float)(s_in / s_out))   the ratio is a float32 division
lo = max(-128, z_out + roundf(0 / s_out)),  hi = 127 (RELU) or min(127, z_out + roundf(6 / s_out))
out = clamp(z_out + MBQM(x - z_in, M, s), lo, hi)
The registered kernel looks the formula up in its 256-entry table (kernels/tables.py).
"""

from __future__ import annotations

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, add_offset, mbqm, quantize_multiplier, round_half_away, saturate
from mdla_quant.kernels.registry import kernel, unary_operands
from mdla_quant.kernels.tables import unary_table

_CEILING = {OpKind.RELU: None, OpKind.RELU6: 6.0}


def relu_formula(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, (s_in, z_in), (s_out, z_out) = unary_operands(op, args, arg_q, out_q)
    m, s = quantize_multiplier(float(s_in / s_out), rounding)  # float32 / float32, as in C
    lo = max(-128, z_out + int(round_half_away(np.float32(0.0) / s_out)))
    ceiling = _CEILING[op.kind]
    hi = (
        127
        if ceiling is None
        else min(127, z_out + int(round_half_away(np.float32(ceiling) / s_out)))
    )
    scaled = mbqm(x.astype(np.int64) - z_in, m, s, rounding, accumulator)
    return saturate(add_offset(scaled, z_out, accumulator), lo, hi)


relu = kernel(OpKind.RELU, OpKind.RELU6)(unary_table(relu_formula))
