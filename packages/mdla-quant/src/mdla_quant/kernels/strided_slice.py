"""STRIDED_SLICE: int8 data movement on the CPU (a flip of H or W, a strided slice the MDLA's
selection convolutions cannot make: mdla_legalize/rules/strided.py).

    out[i_0, ..., i_{r-1}] = x[b_0 + i_0 * s_0, ..., b_{r-1} + i_{r-1} * s_{r-1}]

per axis the first index b, the count kept and the step s (negative: backwards). Input and
output share scale and zero point (the quantizer ties them), so codes move unchanged.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import StridedSliceAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import fail, int8_arg, kernel, same_params


@kernel(OpKind.STRIDED_SLICE)
def strided_slice(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int8_arg(op, args, 0)
    same_params(op, arg_q[0], out_q, "input")
    a = StridedSliceAttrs.of(op)
    index = []
    for b, n, s, d in zip(a.begin, a.size, a.strides, x.shape, strict=True):
        last = b + (n - 1) * s
        if s == 0 or n < 1 or not (0 <= b < d and 0 <= last < d):
            raise fail(op, f"begin {a.begin} size {a.size} strides {a.strides} leave {x.shape}")
        index.append(np.arange(n, dtype=np.int64) * s + b)
    return np.ascontiguousarray(x[np.ix_(*index)])
