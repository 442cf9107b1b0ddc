"""Channel rewrites whose int8 result is exact: grouped convolutions as one dense CONV_2D, and
channel slices, splits and shuffles as 1×1 selection CONV_2Ds. All run on the model-layout
(NCHW) graph, so filters are torch's (O, I/groups, KH, KW).

Grouped convolution (1 < groups < channels: ResNeXt, RegNet). The MDLA maps CONV_2D and
DEPTHWISE_CONV_2D; GROUPED_CONV_2D is not among the ops it was measured to map (silicon fact 1)
and a CONV_2D has no groups operand. One dense CONV_2D whose filter is block-diagonal (zero
outside each group's block of input channels) computes the same convolution:

    y[o] = sum_{i in group(o)} w[o, i] * x[i] = sum_{all i} w_dense[o, i] * x[i]

and it is exact in int8 too: the zeros quantize to 0 (symmetric weights), so the integer
accumulator holds the same products plus zeros; each output channel's weight scale is
max|w[o]| / 127 over the same nonzero weights, so every requantization multiplier is the same.
It costs `groups`× the MACs of the grouped layer (the price of one op instead of
2·groups + 1: per-group slices, convs and a shared-scale CONCATENATION); `explain` says so.

A channel selection (slice, chunk/split piece, shuffle, any permutation) is a 1×1 CONV_2D whose
filter is a 0/1 matrix with one 1 per output channel and a zero bias (`mdla_ir.selection`).
The quantizer gives it weight scale 1 and ties its output to its input's scale and zero point,
so the requantization multiplier is exactly 1 and the int8 output is the selected int8 input,
bit for bit. (CHANNEL_SHUFFLE itself is not on the MDLA, silicon fact 2.) A selection read
by a conv folds into it (`fold_selection`), so ShuffleNetV2's shuffle and its chunk's second
half cost no op at all; what remains is the selection feeding a CONCATENATION.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind
from mdla_ir.attrs import ConvAttrs, ShuffleAttrs, SliceAttrs, TransposeAttrs
from mdla_ir.selection import selection_filter, selection_order
from mdla_legalize.rules.base import Ctx, Rule, one_hot_conv, pat

Array = np.ndarray[Any, Any]


def block_diagonal(w: Array, groups: int, in_channels: int) -> Array:
    """The dense (O, I, KH, KW) filter of a grouped (O, I/groups, KH, KW) one."""
    o, i_g = w.shape[:2]
    o_g = o // groups
    dense = np.zeros((o, in_channels, *w.shape[2:]), dtype=w.dtype)
    for g in range(groups):
        dense[g * o_g : (g + 1) * o_g, g * i_g : (g + 1) * i_g] = w[g * o_g : (g + 1) * o_g]
    return dense


def grouped_conv_to_dense(op: Op, ctx: Ctx) -> list[Op] | None:
    a = ConvAttrs.of(op)
    groups, w = a.groups, ctx.const(op.inputs[1])
    if groups == 1 or w is None or ctx.layout != "NCHW":
        return None
    c_in = ctx.shape(op.inputs[0])[1]
    dense = ctx.add_const(f"{op.inputs[1]}.dense", block_diagonal(w, groups, c_in))
    dense_attrs = dataclasses.replace(a, groups=1)
    return [op.with_(inputs=(op.inputs[0], dense, *op.inputs[2:]), attrs=dense_attrs)]


def grouped_conv_cost(op: Op, graph: Graph) -> str:
    """What the dense rewrite costs, for `explain`'s fix column."""
    groups = ConvAttrs.of(op).groups
    return f"block-diagonal weights: exact, {groups}x this layer's MACs"


def selection_conv(
    op: Op, ctx: Ctx, x: str, y: str, channels: Sequence[int], suffix: str = ""
) -> Op:
    """A 1×1 CONV_2D picking input channels `channels` (in order) of `x` into `y`."""
    filt = selection_filter(channels, ctx.shape(x)[1])
    return one_hot_conv(op, ctx, x, y, filt, suffix=suffix)


def channel_slice_to_selection(op: Op, ctx: Ctx) -> list[Op] | None:
    """SLICE of the channel axis only (a chunk/split piece, x[:, a:b]) -> selection CONV_2D."""
    x, (y,) = op.inputs[0], op.outputs
    shape = ctx.shape(x)
    a = SliceAttrs.of(op)
    begin, size = a.begin, a.size
    if ctx.layout != "NCHW" or len(shape) != 4:
        return None
    full = [i for i in (0, 2, 3) if (begin[i], size[i]) != (0, shape[i])]
    if full:
        return None
    return [selection_conv(op, ctx, x, y, range(begin[1], begin[1] + size[1]))]


def channel_shuffle_to_selection(op: Op, ctx: Ctx) -> list[Op] | None:
    """CHANNEL_SHUFFLE(groups g) over channels -> permutation CONV_2D: out channel
    j*g + i reads input channel i*(C/g) + j."""
    x, (y,) = op.inputs[0], op.outputs
    shape = ctx.shape(x)
    a = ShuffleAttrs.of(op)
    if ctx.layout != "NCHW" or len(shape) != 4 or a.axis % 4 != 1:
        return None
    return [selection_conv(op, ctx, x, y, shuffle_order(shape[1], a.groups))]


def shuffle_order(channels: int, groups: int) -> list[int]:
    per = channels // groups
    return [i * per + j for j in range(per) for i in range(groups)]


_MOVES = (OpKind.RESHAPE, OpKind.TRANSPOSE, OpKind.FLATTEN)


def _moved(idx: Array, op: Op, out_shape: tuple[int, ...]) -> Array:
    if op.kind is OpKind.TRANSPOSE:
        return idx.transpose(TransposeAttrs.of(op).perm)
    return idx.reshape(out_shape)


def movement_chain_to_selection(op: Op, ctx: Ctx) -> list[Op] | None:
    """RESHAPE/TRANSPOSE chains from a 4-D x to a 4-D y that only permute channels (torch's
    view-transpose-reshape channel shuffle of ShuffleNetV2) -> one permutation CONV_2D; or that
    move a x b pixel blocks into channels, in any channel order (a space-to-depth written as
    view / permute / reshape of rank 6) -> one spatial selection CONV_2D, kernel = stride."""
    (y,) = op.outputs
    shape = ctx.shape(y)
    if ctx.layout != "NCHW" or len(shape) != 4:
        return None
    chain = [op]
    while True:
        src = chain[-1].inputs[0]
        p = ctx.producer(src)
        if p is None or p.kind not in _MOVES or not ctx.sole_use(src):
            break
        chain.append(p)
    if len(chain) < 2:
        return None
    for start in range(len(chain) - 1, 0, -1):  # the longest chain that is a selection
        x = chain[start].inputs[0]
        made = _chain_selection(op, ctx, x, chain[: start + 1])
        if made is not None:
            for o in chain[1 : start + 1]:
                ctx.take(o.outputs[0])
            return [made]
    return None


def _chain_selection(op: Op, ctx: Ctx, x: str, chain: list[Op]) -> Op | None:
    """The selection conv from `x` computing the movement `chain` (last op first), if any."""
    (y,), x_shape, shape = op.outputs, ctx.shape(x), ctx.shape(op.outputs[0])
    if len(x_shape) != 4 or (x_shape != shape and _blocks(x_shape, shape) is None):
        return None
    idx = np.arange(int(np.prod(x_shape))).reshape(x_shape)
    for o in reversed(chain):
        idx = _moved(idx, o, ctx.shape(o.outputs[0]))
    if x_shape == shape:
        order = channel_permutation(idx, shape)
        return None if order is None else selection_conv(op, ctx, x, y, order)
    filt = space_to_depth_filter(idx, x_shape, shape)
    # kernel = stride = the block: one tap per output channel
    return None if filt is None else one_hot_conv(op, ctx, x, y, filt, stride=filt.shape[2:])


def _blocks(x_shape: tuple[int, ...], y_shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(a, b) when y could be x's space-to-depth by blocks a x b: (N, C, H, W) ->
    (N, C*a*b, H/a, W/b), some block larger than 1."""
    (n, c, h, w), (yn, yc, yh, yw) = x_shape, y_shape
    if yn != n or h % yh or w % yw:
        return None
    a, b = h // yh, w // yw
    return (a, b) if yc == c * a * b and (a, b) != (1, 1) else None


def space_to_depth_filter(
    idx: Array, x_shape: tuple[int, ...], y_shape: tuple[int, ...]
) -> Array | None:
    """The (C', C, a, b) one-hot filter when `idx` (y's element -> x's flat index) is a
    space-to-depth with any channel order: y[n, k, h, w] = x[n, c_k, h*a + i_k, w*b + j_k]
    (tresnet's and YOLO-style view(N, C, H/a, a, W/b, b).permute(...).reshape(...)), else None."""
    blocks = _blocks(x_shape, y_shape)
    if blocks is None:
        return None
    (a, b), (_, c, h, w), (_, yc, yh, yw) = blocks, x_shape, y_shape
    first = idx[0, :, 0, 0]  # x[0, c_k, i_k, j_k]
    ck, ik, jk = first // (h * w), first % (h * w) // w, first % w
    if np.any(ik >= a) or np.any(jk >= b):
        return None
    base = np.arange(int(np.prod(x_shape))).reshape(x_shape)
    rows = np.arange(yh)[None, :, None] * a + ik[:, None, None]
    cols = np.arange(yw)[None, None, :] * b + jk[:, None, None]
    if not np.array_equal(idx, base[:, ck[:, None, None], rows, cols]):
        return None
    filt = np.zeros((yc, c, a, b), np.float32)
    filt[np.arange(yc), ck, ik, jk] = 1.0
    return filt


def channel_permutation(idx: Array, shape: tuple[int, ...]) -> list[int] | None:
    """p with idx[n, c, h, w] == index of x[n, p[c], h, w], or None if not such a map."""
    base = np.arange(int(np.prod(shape))).reshape(shape)
    order = [int(idx[0, c, 0, 0]) // (shape[2] * shape[3]) for c in range(shape[1])]
    if sorted(order) != list(range(shape[1])):
        return None
    return order if np.array_equal(idx, base[:, order]) else None


def fold_selection(op: Op, ctx: Ctx) -> list[Op] | None:
    """A selection read by a CONV_2D folds into it, exactly:

    SEL2(SEL1(x)) -> SEL(x), the composed order (a shuffle then a chunk piece);
    CONV(SEL(x))  -> CONV(x) with the filter's input channels scattered to where SEL read
                     them (zeros elsewhere), when only CONV reads SEL(x).

    Exact in int8: SEL(x) holds x's int8 values at x's scale and zero point, so the conv sees
    the same products (padding taps are skipped either way) and each output channel keeps its
    weights, so its weight scale and multiplier. The selection's MACs and op are gone."""
    src = op.inputs[0]
    p = ctx.producer(src)
    if ctx.layout != "NCHW" or p is None or ConvAttrs.of(op).groups != 1:
        return None
    order = selection_order(p, ctx.const, ctx.layout)
    if order is None:
        return None
    x, mine = p.inputs[0], selection_order(op, ctx.const, ctx.layout)
    if mine is not None:
        if ctx.sole_use(src):
            ctx.take(src)
        return [selection_conv(op, ctx, x, op.outputs[0], [order[i] for i in mine])]
    w = ctx.const(op.inputs[1])
    if w is None or not ctx.sole_use(src) or len(set(order)) != len(order):
        return None
    ctx.take(src)
    scattered = np.zeros((w.shape[0], ctx.shape(x)[1], *w.shape[2:]), w.dtype)
    scattered[:, order] = w
    filt = ctx.add_const(f"{op.inputs[1]}.unselected", scattered)
    return [op.with_(inputs=(x, filt, *op.inputs[2:]))]


GROUPS: list[Rule] = [
    (pat(OpKind.CONV_2D), grouped_conv_to_dense),  # CONV(groups g) -> CONV(block-diagonal w)
]

SELECTIONS: list[Rule] = [
    (pat(OpKind.SLICE), channel_slice_to_selection),  # SLICE(x, channels) -> CONV 1×1 (0/1 w)
    (pat(OpKind.CHANNEL_SHUFFLE), channel_shuffle_to_selection),  # SHUFFLE -> CONV 1×1 (perm)
    (pat(*_MOVES), movement_chain_to_selection),  # RESHAPE(TRANSPOSE(RESHAPE x)) -> CONV 1×1/a×b
    (pat(OpKind.CONV_2D), fold_selection),  # CONV(SEL(x)) -> CONV(x), scattered filter
]

# Rule name -> what its rewrite costs, for explain's fix column.
COSTS = {grouped_conv_to_dense.__name__: grouped_conv_cost}
