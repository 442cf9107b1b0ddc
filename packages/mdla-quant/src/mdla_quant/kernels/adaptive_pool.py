"""ADAPTIVE_AVG_POOL_2D and ADAPTIVE_MAX_POOL_2D to any output size, int8 (a CPU partition's:
the MDLA's pools take them only where the sizes divide, `adaptive_pool_to_avgpool` and the
importer's MAX_POOL_2D). Input and output share scale and zero point (the quantizer ties them),
so the pools never requantize.

Bins as torch's: output row i averages input rows floor(i * H / OH) .. ceil((i + 1) * H / OH)
(exclusive), columns alike; bins may overlap and differ in size. Per bin, as AVERAGE_POOL_2D
(TFLite's reference_integer_ops, `pooling.py`):

    acc = sum of the int8 codes in the bin, n = their count
    out = clamp(acc > 0 ? (acc + n/2) / n : (acc - n/2) / n, -128, 127)   (C truncating
          division: round half away from zero)

ADAPTIVE_MAX_POOL_2D takes the largest code of each bin. The engine's cpu device computes the
same (csrc/cpu/adaptive_pool.c).
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import AdaptivePoolAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, saturate
from mdla_quant.kernels.registry import fail, int8_arg, kernel, same_params


def bins(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive bins of `size` inputs into `out` outputs: [start, end) each."""
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


@kernel(OpKind.ADAPTIVE_AVG_POOL_2D, OpKind.ADAPTIVE_MAX_POOL_2D)
def adaptive_pool_2d(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int8_arg(op, args, 0)
    same_params(op, arg_q[0], out_q, "input")
    if x.ndim != 4:
        raise fail(op, f"input must be NHWC, got shape {x.shape}")
    size = AdaptivePoolAttrs.of(op).output_size
    if len(size) != 2 or min(size) < 1:
        raise fail(op, f"output size {size} is not two positive sizes")
    wide = x.astype(np.int64)
    rows, cols = bins(x.shape[1], size[0]), bins(x.shape[2], size[1])
    out = np.empty((x.shape[0], size[0], size[1], x.shape[3]), np.int64)
    for i, (r0, r1) in enumerate(rows):
        for j, (c0, c1) in enumerate(cols):
            window = wide[:, r0:r1, c0:c1]
            if op.kind is OpKind.ADAPTIVE_MAX_POOL_2D:
                out[:, i, j] = window.max(axis=(1, 2))
                continue
            acc = window.sum(axis=(1, 2))
            n = (r1 - r0) * (c1 - c0)
            out[:, i, j] = np.sign(acc) * ((np.abs(acc) + n // 2) // n)
    return saturate(out, -128, 127)
