"""`nn.PixelUnshuffle` / `F.pixel_unshuffle` (and ATen's `pixel_unshuffle`) -> one selection
CONV_2D (`mdla_ir.selection`: a spatial one, kernel and stride r, one 1 per output channel).

torch:  out[n, c*r*r + i*r + j, h, w] = in[n, c, h*r + i, w*r + j]

so output channel c*r*r + i*r + j of the conv takes input channel c at tap (i, j). Exact in
float (one product by 1, the rest by 0) and in int8 (the quantizer keeps a selection conv's
input scale and zero point: multiplier 1), and all on the MDLA, where the export path's
view / permute / view of rank 6 needed the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.ops import OpKind


def unshuffle_filter(channels: int, r: int) -> np.ndarray[Any, Any]:
    """The (C*r*r, C, r, r) float32 one-hot filter of the module docstring."""
    w = np.zeros((channels * r * r, channels, r, r), np.float32)
    for c in range(channels):
        for i in range(r):
            for j in range(r):
                w[c * r * r + i * r + j, c, i, j] = 1.0
    return w


def _unshuffle(c: Ctx, x: Any, r: int) -> None:
    shape = c.tensors[c.ref(x)].shape
    if len(shape) != 4 or r < 1 or shape[2] % r or shape[3] % r:
        raise Unsupported(f"pixel_unshuffle by {r} of a {list(shape)} tensor")
    node = c.node
    assert node is not None
    w = c.const(f"{node.name}.selection", unshuffle_filter(shape[1], r))
    b = c.const(f"{node.name}.zero_bias", np.zeros(shape[1] * r * r, np.float32))
    c.emit(
        OpKind.CONV_2D,
        [c.ref(x), w, b],
        stride=(r, r),
        dilation=(1, 1),
        padding=(0, 0, 0, 0),
        groups=1,
        fuse="NONE",
    )


def m_pixel_unshuffle(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """nn.PixelUnshuffle (m given), F.pixel_unshuffle / aten.pixel_unshuffle (x, factor)."""
    if m is not None:
        r = m.downscale_factor
    else:
        r = c.value(args[1] if len(args) > 1 else kw["downscale_factor"])
    _unshuffle(c, args[0] if args else kw["input"], int(r))
