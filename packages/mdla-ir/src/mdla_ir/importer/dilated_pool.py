"""A dilated max pool (`nn.MaxPool2d(dilation=d)`, `F.max_pool2d`, `aten.max_pool2d`) as ops
the IR has, by its phase decomposition. Exact in float and in int8: every op only moves or
selects values, so the int8 result is the max of the same input codes.

With dilation d, output o (stride 1) takes the max of the padded input at o, o + d, ...,
o + (k-1)d: positions of one phase (the same remainder mod d). So:

1. pad each axis with values of the same phase: a padded position takes the nearest real
   position of its phase on its side (a tap of the same window, so the max is unchanged:
   every window holds a real value), and the length becomes a multiple of d. A
   CONCATENATION of SLICEs, as the reflect pad's (`strided.py`);
2. split the d x d phases into channels: a spatial selection CONV_2D, kernel and stride d
   (`unshuffle.py`'s), output channel (i*d + j)*C + c = channel c at tap (i, j);
3. an undilated MAX_POOL_2D, kernel k, stride 1, no padding, pools every phase at once;
4. DEPTH_TO_SPACE(d) puts the phases back in place (its channel order is step 2's);
5. a SLICE keeps the first outputs, a STRIDED_SLICE every s-th for stride s > 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.ops import OpKind


def phase_sources(size: int, d: int, before: int, after: int) -> list[int]:
    """The source index of each position of an axis of `size` padded by `before` and `after`
    (then up to a multiple of d): real positions are themselves, a padded one the nearest
    real position of its phase on its side."""
    total = size + before + after
    total += -total % d
    out = []
    for pos in range(-before, total - before):
        src = pos % d if pos < 0 else pos if pos < size else size - 1 - (size - 1 - pos) % d
        if not 0 <= src < size:
            raise Unsupported(
                f"a dilated max pool (dilation {d}) over an axis of {size}: a padded window "
                "has no value of its phase",
                "use an input at least as large as the dilation",
            )
        out.append(src)
    return out


def _runs(sources: Sequence[int]) -> list[tuple[int, int]]:
    """`sources` as (first, count) runs of consecutive indices."""
    runs: list[tuple[int, int]] = []
    for s in sources:
        if runs and runs[-1][0] + runs[-1][1] == s:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((s, 1))
    return runs


def _phase_pad(c: Ctx, x: str, axis: int, sources: Sequence[int]) -> str:
    """x along `axis` gathered at `sources` (a CONCATENATION of SLICEs; x when unchanged)."""
    shape = list(c.tensors[x].shape)
    if list(sources) == list(range(shape[axis])):
        return x
    parts = []
    for first, count in _runs(sources):
        if (first, count) == (0, shape[axis]):
            parts.append(x)
            continue
        begin, size = [0] * len(shape), list(shape)
        begin[axis], size[axis] = first, count
        tag = f"phase{axis}_{first}"
        parts.append(
            emit_shaped(c, OpKind.SLICE, [x], size, tag, begin=tuple(begin), size=tuple(size))
        )
    shape[axis] = len(sources)
    if len(parts) == 1:
        return parts[0]
    return emit_shaped(c, OpKind.CONCATENATION, parts, shape, f"phase_pad{axis}", axis=axis)


def phase_filter(channels: int, d: int) -> np.ndarray[Any, Any]:
    """(d*d*C, C, d, d): output channel (i*d + j)*C + c takes channel c at tap (i, j)."""
    w = np.zeros((d * d * channels, channels, d, d), np.float32)
    for i in range(d):
        for j in range(d):
            for ch in range(channels):
                w[(i * d + j) * channels + ch, ch, i, j] = 1.0
    return w


def dilated_max_pool2d(
    c: Ctx, x: str, k: tuple[int, int], s: tuple[int, int], pads: Sequence[int], d: int
) -> None:
    """The module docstring's ops for an NCHW `x`; pads (top, bottom, left, right)."""
    n, ch, h, w = c.tensors[x].shape
    out_hw = [(e + lo + hi - (kk - 1) * d - 1) // st + 1 for e, lo, hi, kk, st in
              zip((h, w), pads[0::2], pads[1::2], k, s, strict=True)]  # fmt: skip
    y = x
    for axis, extent, lo, hi in ((2, h, pads[0], pads[1]), (3, w, pads[2], pads[3])):
        y = _phase_pad(c, y, axis, phase_sources(extent, d, lo, hi))
    ph, pw = (v // d for v in c.tensors[y].shape[2:])
    node = c.node
    assert node is not None
    wt = c.const(f"{node.name}.phases", phase_filter(ch, d))
    bias = c.const(f"{node.name}.phases_bias", np.zeros(d * d * ch, np.float32))
    none = (0, 0, 0, 0)
    y = emit_shaped(
        c, OpKind.CONV_2D, [y, wt, bias], (n, d * d * ch, ph, pw), "phases",
        stride=(d, d), dilation=(1, 1), padding=none, groups=1, fuse="NONE",
    )  # fmt: skip
    qh, qw = ph - k[0] + 1, pw - k[1] + 1
    y = emit_shaped(
        c, OpKind.MAX_POOL_2D, [y], (n, d * d * ch, qh, qw), "phase_pool",
        kernel=k, stride=(1, 1), padding=none, fuse="NONE",
    )  # fmt: skip
    y = emit_shaped(c, OpKind.DEPTH_TO_SPACE, [y], (n, ch, qh * d, qw * d), "unphase", block_size=d)
    size = (n, ch, out_hw[0], out_hw[1])
    if s == (1, 1):
        c.emit(OpKind.SLICE, [y], begin=(0, 0, 0, 0), size=size)
    else:
        c.emit(OpKind.STRIDED_SLICE, [y], begin=(0, 0, 0, 0), size=size, strides=(1, 1, *s))


def one_dilation(k: tuple[int, int], dilation: tuple[int, int]) -> int:
    """The dilation of both pooled axes (an axis of kernel 1 takes any); refused when they
    differ (DEPTH_TO_SPACE has one block size)."""
    rates = {dd for dd, kk in zip(dilation, k, strict=True) if kk > 1}
    if len(rates) > 1:
        raise Unsupported(
            f"max pooling with dilation {dilation} (one rate per axis: the phase split "
            "takes one rate for H and W)",
            "use the same dilation for H and W",
        )
    return rates.pop() if rates else 1
