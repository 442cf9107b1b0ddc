"""Rewrites for detector heads' box decode (YOLO's `dist2bbox`: `lt, rb = distance.chunk(2, 1)`
on a `[N, 4, anchors]` tensor).

A channel slice of a tensor that is not 4-D (`[N, C, L]`, `[N, C, D, H, W]`) is the same
selection as the 4-D one `channels.channel_slice_to_selection` makes a 1×1 CONV_2D: viewed as
`[N, C, 1, L·…]`, selected, viewed back. Exact in int8 for the same reason (the selection's
output keeps its input's scale and zero point, the multiplier is 1), and a RESHAPE and a
CONV_2D run on the MDLA and on the CPU alike, where SLICE runs on neither. A channel shuffle
of such a tensor (`F.channel_shuffle` of a 1-D signal) is the same permutation selection.
"""

from __future__ import annotations

import math

from mdla_ir import Op, OpKind
from mdla_ir.attrs import ShuffleAttrs, SliceAttrs
from mdla_legalize.rules.base import Ctx, Rule, derive, pat
from mdla_legalize.rules.channels import selection_conv, shuffle_order


def flat_channel_slice_to_selection(op: Op, ctx: Ctx) -> list[Op] | None:
    """SLICE of the channel axis of a 3-D or 5-D+ tensor -> RESHAPE, selection CONV_2D,
    RESHAPE."""
    x, (y,) = op.inputs[0], op.outputs
    shape = ctx.shape(x)
    a = SliceAttrs.of(op)
    if ctx.layout != "NCHW" or len(shape) in (1, 2, 4):
        return None
    if any((a.begin[i], a.size[i]) != (0, shape[i]) for i in range(len(shape)) if i != 1):
        return None
    n, c, rest = shape[0], shape[1], math.prod(shape[2:])
    picked = a.size[1]
    x4 = ctx.tensor(f"{x}.planar", (n, c, 1, rest))
    y4 = ctx.tensor(f"{y}.planar", (n, picked, 1, rest))
    return [
        derive(op, "planar", OpKind.RESHAPE, [x], [x4], shape=(n, c, 1, rest)),
        selection_conv(op, ctx, x4, y4, range(a.begin[1], a.begin[1] + picked), "select"),
        derive(op, "", OpKind.RESHAPE, [y4], [y], shape=ctx.shape(y)),
    ]


def flat_channel_shuffle_to_selection(op: Op, ctx: Ctx) -> list[Op] | None:
    """CHANNEL_SHUFFLE of a tensor that is not 4-D with channels on axis 1 -> RESHAPE to
    [outer, C, 1, inner], the permutation CONV_2D, RESHAPE back."""
    x, (y,) = op.inputs[0], op.outputs
    shape = ctx.shape(x)
    a = ShuffleAttrs.of(op)
    axis = a.axis % len(shape)
    if ctx.layout != "NCHW" or (len(shape) == 4 and axis == 1):
        return None  # channels.channel_shuffle_to_selection's
    outer, c, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
    x4 = ctx.tensor(f"{x}.planar", (outer, c, 1, inner))
    y4 = ctx.tensor(f"{y}.planar", (outer, c, 1, inner))
    return [
        derive(op, "planar", OpKind.RESHAPE, [x], [x4], shape=(outer, c, 1, inner)),
        selection_conv(op, ctx, x4, y4, shuffle_order(c, a.groups), "select"),
        derive(op, "", OpKind.RESHAPE, [y4], [y], shape=shape),
    ]


DETECT: list[Rule] = [
    (pat(OpKind.SLICE), flat_channel_slice_to_selection),  # SLICE(x[N,C,L], c) -> CONV 1×1
    (pat(OpKind.CHANNEL_SHUFFLE), flat_channel_shuffle_to_selection),  # x[N,C,L] -> CONV 1×1
]
