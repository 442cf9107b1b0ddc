"""MAX_POOL_3D, int8, as a CPU partition runs it (legalization makes 2-D pools over frames of
every one, `pool3d_to_pool2d`; a 3-D pool stays when that rule is skipped, `workbench bisect`).
NDHWC; input and output share scale and zero point (the quantizer ties them). Per window of
(kt, kh, kw) taps at stride (st, sh, sw) over the input padded by (pt, ph, pw) on both sides:

    out = the largest code among the window's taps inside the input (padding never wins)

The engine's cpu device computes the same (csrc/cpu/max_pool_3d.c).
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import PoolAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import fail, int8_arg, kernel, same_params


@kernel(OpKind.MAX_POOL_3D)
def max_pool_3d(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int8_arg(op, args, 0)
    same_params(op, arg_q[0], out_q, "input")
    a = PoolAttrs.of(op)
    if x.ndim != 5 or len(a.kernel) != 3 or len(a.stride) != 3 or len(a.padding) != 3:
        raise fail(op, f"wants NDHWC input and 3-D kernel, stride, padding: {x.shape}, {a}")
    if any(p >= k for p, k in zip(a.padding, a.kernel, strict=True)):
        raise fail(op, f"padding {a.padding} is not below the kernel {a.kernel}")
    pads = ((0, 0), *((p, p) for p in a.padding), (0, 0))
    xp = np.pad(x.astype(np.int16), pads, constant_values=-129)  # below every code
    view = np.lib.stride_tricks.sliding_window_view(xp, tuple(a.kernel), axis=(1, 2, 3))
    view = view[:, :: a.stride[0], :: a.stride[1], :: a.stride[2]]
    return np.ascontiguousarray(view.max(axis=(5, 6, 7)).astype(np.int8))
