"""RESIZE_NEAREST_NEIGHBOR, int8 NHWC (TFLite reference_ops::ResizeNearestNeighbor).

Per axis, in float32:  scale = (in-1)/(out-1) with align_corners and out > 1, else in/out
                       src = min(f((dst + o) * scale), in - 1)     o = 0.5 with half_pixel_centers
                       f = round (half away) with align_corners, else floor
                       half_pixel_centers: src = max(src, 0)
out[n, y, x, c] = in[n, src_y(y), src_x(x), c]: int8 codes move unchanged, so input and output
share scale and zero point.
"""

from __future__ import annotations

from mdla_ir.graph import Op, QuantParams
from mdla_ir.interp.resample import nearest_index
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import kernel
from mdla_quant.kernels.resize_bilinear import resize_operands


@kernel(OpKind.RESIZE_NEAREST_NEIGHBOR)
def resize_nearest(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, (oh, ow), align, half = resize_operands(op, args, arg_q, out_q)
    rows = nearest_index(x.shape[1], oh, align, half)
    cols = nearest_index(x.shape[2], ow, align, half)
    return x[:, rows][:, :, cols]
