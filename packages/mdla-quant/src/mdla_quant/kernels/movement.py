"""CONCATENATION, PAD and RESHAPE: data movement, no arithmetic; int8, and int16 for 16x8.

Input and output share scale and zero point (the int8 spec; LiteRT's CONCATENATION Prepare
rejects int8 inputs whose params differ from the output's), so values move unchanged:
    CONCATENATION: out = concat(x_0, ..., x_k, axis)
    PAD:           out = pad(x, pads, value = z)          (z is real 0)
    RESHAPE:       out = reshape(x, shape)
Each body serves a `Width`: int8's here, int16's (zero point 0) in `a16_ops`.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import AxisAttrs, PadAttrs, ReshapeAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import INT8, Width, fail, for_width, kernel


def concatenation_body(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, width: Width
) -> Array:
    xs = [width.arg(op, args, i) for i in range(len(args))]
    for i, q in enumerate(arg_q):
        width.same(op, q, out_q, f"input {i}")
    try:
        return np.concatenate(xs, axis=AxisAttrs.of(op).axis)
    except (ValueError, np.exceptions.AxisError) as exc:
        raise fail(op, f"cannot concatenate shapes {[x.shape for x in xs]}: {exc}") from exc


def pad_body(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, width: Width
) -> Array:
    x = width.arg(op, args, 0)
    zp = width.same(op, arg_q[0], out_q, "input")
    pads = list(PadAttrs.of(op).pads)
    if len(pads) != x.ndim or any(len(p) != 2 or min(p) < 0 for p in pads):
        raise fail(op, f"pads {pads} must give (before, after) >= 0 for each of {x.ndim} dims")
    return np.pad(x, pads, constant_values=zp)


def reshape_body(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, width: Width
) -> Array:
    x = width.arg(op, args, 0)
    width.same(op, arg_q[0], out_q, "input")
    shape = ReshapeAttrs.of(op).shape
    try:
        return x.reshape(shape)
    except ValueError as exc:
        raise fail(op, f"cannot reshape {x.shape} to {shape}") from exc


concatenation = kernel(OpKind.CONCATENATION)(for_width(concatenation_body, INT8))
pad = kernel(OpKind.PAD)(for_width(pad_body, INT8))
reshape = kernel(OpKind.RESHAPE)(for_width(reshape_body, INT8))
