"""Strided and spatial slices as selection convolutions: exact in int8, on the MDLA.

A STRIDED_SLICE (`x[..., 1::2, ::2]`, YOLOv5's Focus, a channel `flip`) or a SLICE of H or W
(the pieces of `roll` and of reflect / replicate padding) of a 4-D NCHW tensor whose batch axis
is whole and whose H/W steps are positive picks, for output (c, i, j), the input value
(ch[c], bh + i*sh, bw + j*sw). One CONV_2D with no padding computes exactly that:

    filter[c, ch[c], bh, bw] = 1 (zeros elsewhere), bias 0, stride (sh, sw),
    kernel per axis k = max(b + 1, d - n*s + 1), so floor((d - k) / s) + 1 = n outputs
    (n = 1: stride d - b, kernel b + 1, the one window that holds row b)

Output row i's window starts at i*s, so its only nonzero tap reads row b + i*s. The filter
has one 1 per output channel, so the quantizer treats it as a selection (`mdla_ir.selection`):
weight scale 1, output tied to the input's scale and zero point, multiplier exactly 1; the int8
output is the selected int8 input, bit for bit. YOLOv5's Focus (four phase slices concatenated
on channels) becomes four such convolutions, which `concat_selections_to_one` makes one: a
2×2 stride-2 CONV_2D, SPACE_TO_DEPTH up to the order of its output channels.
A flip of H or W (a negative spatial step) is no window of a convolution: it stays a
STRIDED_SLICE, which the MDLA does not map.
"""

from __future__ import annotations

import numpy as np

from mdla_ir import Op, OpKind
from mdla_ir.attrs import AxisAttrs, ConvAttrs, SliceAttrs, StridedSliceAttrs
from mdla_ir.selection import selection_filter_of
from mdla_legalize.rules.base import Ctx, Rule, one_hot_conv, pat


def _axes(op: Op) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    if op.kind is OpKind.SLICE:
        a = SliceAttrs.of(op)
        return a.begin, a.size, (1,) * len(a.begin)
    s = StridedSliceAttrs.of(op)
    return s.begin, s.size, s.strides


def window(d: int, b: int, n: int, s: int) -> tuple[int, int]:
    """(kernel, stride) of the valid convolution window whose tap b picks b + i*s, i < n."""
    if n == 1:
        return b + 1, max(1, d - b)
    return max(b + 1, d - n * s + 1), s


def strided_slice_to_selection(op: Op, ctx: Ctx) -> list[Op] | None:
    """STRIDED_SLICE / spatial SLICE (batch whole, H/W steps > 0) -> selection CONV_2D."""
    x, (y,) = op.inputs[0], op.outputs
    shape = ctx.shape(x)
    begin, size, steps = _axes(op)
    if ctx.layout != "NCHW" or len(shape) != 4 or (begin[0], size[0], steps[0]) != (0, shape[0], 1):
        return None
    if min(steps[2:]) < 1:
        return None
    spatial = [(begin[i], size[i], steps[i]) != (0, shape[i], 1) for i in (2, 3)]
    if op.kind is OpKind.SLICE and not any(spatial):
        return None  # a channel slice: channel_slice_to_selection's
    (kh, sh), (kw, sw) = (window(shape[i], begin[i], size[i], steps[i]) for i in (2, 3))
    channels = [begin[1] + i * steps[1] for i in range(size[1])]
    w = np.zeros((len(channels), shape[1], kh, kw), np.float32)
    w[np.arange(len(channels)), channels, begin[2], begin[3]] = 1.0
    return [one_hot_conv(op, ctx, x, y, w, stride=(sh, sw))]


def compose_slices(op: Op, ctx: Ctx) -> list[Op] | None:
    """A slice of a 4-D slice read by nothing else -> one slice (torch.export slices one axis
    at a time: x[..., ::2, ::2] is two): output i reads b1 + (b2 + i*s2) * s1. Unit steps
    stay a SLICE; a composite with a negative H/W step (no selection conv) is left alone."""
    p = ctx.producer(op.inputs[0])
    if p is None or p.kind not in _SLICES or not ctx.sole_use(op.inputs[0]):
        return None
    if len(ctx.shape(p.inputs[0])) != 4:
        return None
    (b1, _, s1), (b2, n2, s2) = _axes(p), _axes(op)
    steps = tuple(a * b for a, b in zip(s1, s2, strict=True))
    if min(steps[2:]) < 1:
        return None
    ctx.take(op.inputs[0])
    begin = tuple(a + b * s for a, b, s in zip(b1, b2, s1, strict=True))
    if all(s == 1 for s in steps):
        attrs: dict[str, tuple[int, ...]] = {"begin": begin, "size": n2}
        return [op.with_(kind=OpKind.SLICE, inputs=(p.inputs[0],), attrs=attrs)]
    attrs = {"begin": begin, "size": n2, "strides": steps}
    return [op.with_(kind=OpKind.STRIDED_SLICE, inputs=(p.inputs[0],), attrs=attrs)]


_SLICES = (OpKind.STRIDED_SLICE, OpKind.SLICE)


def _window_out(d: int, k: int, s: int) -> int:
    return (d - k) // s + 1


def concat_selections_to_one(op: Op, ctx: Ctx) -> list[Op] | None:
    """CONCATENATION on channels of selection convs of one x with one stride (YOLOv5's Focus:
    its four phases) -> one selection CONV_2D: each filter placed top-left in the largest
    kernel (a window starting at i*s still holds its tap) where that leaves the output size."""
    out_shape = ctx.shape(op.outputs[0])
    if ctx.layout != "NCHW" or len(out_shape) != 4 or AxisAttrs.of(op).axis % 4 != 1:
        return None
    convs = [ctx.producer(n) for n in op.inputs]
    if any(p is None or not ctx.sole_use(n) for p, n in zip(convs, op.inputs, strict=True)):
        return None
    found = [(p, selection_filter_of(p, ctx.const)) for p in convs if p is not None]
    if len(found) < 2 or any(w is None for _, w in found):
        return None
    x = found[0][0].inputs[0]
    stride = ConvAttrs.of(found[0][0]).stride
    if any(p.inputs[0] != x or ConvAttrs.of(p).stride != stride for p, _ in found):
        return None
    in_shape = ctx.shape(x)
    kh = max(w.shape[2] for _, w in found if w is not None)
    kw = max(w.shape[3] for _, w in found if w is not None)
    grown_out = (_window_out(in_shape[2], kh, stride[0]), _window_out(in_shape[3], kw, stride[1]))
    if grown_out != out_shape[2:]:
        return None
    parts = []
    for p, w in found:
        assert w is not None
        ctx.take(p.outputs[0])
        grown = np.zeros((w.shape[0], w.shape[1], kh, kw), np.float32)
        grown[:, :, : w.shape[2], : w.shape[3]] = w
        parts.append(grown)
    (y,) = op.outputs
    return [one_hot_conv(op, ctx, x, y, np.concatenate(parts), stride=stride)]


COMPOSE: list[Rule] = [
    (pat(*_SLICES), compose_slices),  # SLICE(SLICE(x)) -> STRIDED_SLICE(x)
]

STRIDED: list[Rule] = [
    (pat(OpKind.STRIDED_SLICE, OpKind.SLICE), strided_slice_to_selection),  # -> CONV k×k (0/1 w)
    (pat(OpKind.CONCATENATION), concat_selections_to_one),  # CAT(SEL_i(x), channels) -> SEL(x)
]
