"""DEPTH_TO_SPACE, int8 NHWC (TFLite reference_ops::DepthToSpace).

    out[n, h*r + i, w*r + j, c] = in[n, h, w, (i*r + j)*C + c]      C = in channels / r^2
int8 codes move unchanged: input and output share scale and zero point.
"""

from __future__ import annotations

from mdla_ir.attrs import BlockAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.interp.resample import depth_to_space_nhwc
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import fail, int8_arg, kernel, same_params


@kernel(OpKind.DEPTH_TO_SPACE)
def depth_to_space(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int8_arg(op, args, 0)
    same_params(op, arg_q[0], out_q, "input")
    r = BlockAttrs.of(op).block_size
    if x.ndim != 4 or r < 1 or x.shape[3] % (r * r):
        raise fail(op, f"input {x.shape} is not NHWC with channels a multiple of {r}^2")
    return depth_to_space_nhwc(x, r)
