"""TRANSPOSE: data movement, no arithmetic (a CPU partition's op: the MDLA has none); int8,
and int16 for 16x8.

    out = transpose(x, perm)      out.shape[i] = x.shape[perm[i]]

Input and output share scale and zero point (the int8 spec, as for RESHAPE; the quantizer ties
them, `mdla_quant.quantize`), so values move unchanged. The body serves a `Width`: int8's
here, int16's in `a16_ops`.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import TransposeAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import INT8, Width, fail, for_width, kernel


def transpose_body(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, width: Width
) -> Array:
    x = width.arg(op, args, 0)
    width.same(op, arg_q[0], out_q, "input")
    perm = tuple(TransposeAttrs.of(op).perm)
    if sorted(perm) != list(range(x.ndim)):
        raise fail(op, f"perm {perm} is not a permutation of the {x.ndim} axes of {x.shape}")
    return np.ascontiguousarray(x.transpose(perm))


transpose = kernel(OpKind.TRANSPOSE)(for_width(transpose_body, INT8))
