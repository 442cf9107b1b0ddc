"""Channels-last regions: ops over the last axis of an NHWC view, kept in the device layout.

ConvNeXt's block reads its NCHW activation channels-last: permute(0, 2, 3, 1) -> LayerNorm ->
Linear -> GELU -> Linear -> permute(0, 3, 1, 2). That NHWC view is the device's own memory
order, so nothing between the permutes needs to move:

    channels_last_tensors(graph)   for the layout pass: the tensors of each closed region from a
                                   TRANSPOSE (0, 2, 3, 1) of a rank-4 activation, through ops
                                   over the last axis, to its exits (the permute back). The layout
                                   pass holds them in their model order, which is the device's
                                   NHWC order of the activation, so both TRANSPOSEs become
                                   identities and the ops between need no TRANSPOSEs around them
    CHANNELS_LAST                  device-layout rules: an identity TRANSPOSE is dropped, one
                                   that moves only axes of size 1 is a RESHAPE; a
                                   FULLY_CONNECTED over the last axis of a rank-4 device tensor is
                                   a 1x1 CONV_2D of that NHWC image (filter (O, 1, 1, I)), which
                                   the MDLA maps (silicon fact 3)

A region is closed when every reader of its tensors is an exit (a TRANSPOSE, as the permute
back, or a RESHAPE, as a flatten after it; the layout pass composes their permutations) or an op of
LAST_AXIS_KINDS (LAYER_NORM over the last axis only, FULLY_CONNECTED, elementwise activations,
elementwise binary ops of region tensors only) whose other inputs are constants, and no region
tensor is a graph input or output; an open region is left to the layout pass's TRANSPOSEs.
"""

from __future__ import annotations

from mdla_ir import Graph, Op, OpKind
from mdla_ir.attrs import NormAttrs, TransposeAttrs
from mdla_ir.ops import ACTIVATIONS, BINARY
from mdla_legalize.rules.base import Ctx, Rule, derive, pat
from mdla_legalize.rules.heads import linear_bias

TO_NHWC = (0, 2, 3, 1)
LAST_AXIS_KINDS = ACTIVATIONS | BINARY | {OpKind.LAYER_NORM, OpKind.FULLY_CONNECTED}
# Readers that leave a region: the layout pass's handlers of these read each tensor's own
# permutation, so they compose with the region's (the permute back becomes an identity).
EXITS = frozenset({OpKind.TRANSPOSE, OpKind.RESHAPE, OpKind.FLATTEN})


def _transposes(graph: Graph, op: Op, perm: tuple[int, ...]) -> bool:
    return (
        op.kind is OpKind.TRANSPOSE
        and TransposeAttrs.of(op).perm == perm
        and len(graph.tensors[op.inputs[0]].shape) == 4
    )


def _last_axis(graph: Graph, op: Op, region: set[str]) -> bool:
    """Whether `op` (reading a region tensor) computes along the last axis only, with every
    input not in the region a constant (none at all for a binary op)."""
    if op.kind not in LAST_AXIS_KINDS:
        return False
    if op.kind is OpKind.LAYER_NORM and len(NormAttrs.of(op).normalized_shape or ()) != 1:
        return False
    for name in op.inputs:
        const = graph.tensors[name].is_const
        if name not in region and (not const or op.kind in BINARY):
            return False
    return all(len(graph.tensors[o].shape) == 4 for o in op.outputs)


def _region(graph: Graph, readers: dict[str, list[Op]], start: str) -> set[str] | None:
    """The closed region from `start` (a TRANSPOSE (0, 2, 3, 1)'s output), or None."""
    region, todo = {start}, [start]
    inner: list[Op] = []
    while todo:
        name = todo.pop()
        for op in readers.get(name, ()):
            if op.kind in EXITS:
                continue
            if op.kind not in LAST_AXIS_KINDS:
                return None
            inner.append(op)
            new = [o for o in op.outputs if o not in region]
            region.update(new)
            todo.extend(new)
    boundary = set(graph.inputs) | set(graph.outputs)
    if region & boundary or not all(_last_axis(graph, op, region) for op in inner):
        return None
    return region


def channels_last_tensors(graph: Graph) -> frozenset[str]:
    """Every tensor of a closed channels-last region of the NCHW `graph` (module docstring)."""
    if graph.layout != "NCHW":
        return frozenset()
    readers = graph.consumers()
    found: set[str] = set()
    for op in graph.ops:
        if _transposes(graph, op, TO_NHWC) and not graph.tensors[op.inputs[0]].is_const:
            region = _region(graph, readers, op.outputs[0])
            found |= region or set()
    return frozenset(found)


def drop_identity_transpose(op: Op, ctx: Ctx) -> list[Op] | None:
    """TRANSPOSE with the identity permutation (a closed region's ends) -> its input."""
    perm = TransposeAttrs.of(op).perm
    (y,) = op.outputs
    if perm != tuple(range(len(perm))) or y in ctx.graph.outputs:
        return None
    ctx.rw.alias[y] = op.inputs[0]
    return []


def unit_axes_transpose_to_reshape(op: Op, ctx: Ctx) -> list[Op] | None:
    """A TRANSPOSE that moves only axes of size 1 keeps the memory order: a RESHAPE (what the
    layout pass leaves around an op over a (1, 1, 1, C) tensor, a classifier's LayerNorm)."""
    perm, shape = TransposeAttrs.of(op).perm, ctx.shape(op.inputs[0])
    moved = [p for p in perm if shape[p] != 1]
    if moved != sorted(moved):
        return None
    return [op.with_(kind=OpKind.RESHAPE, attrs={"shape": ctx.shape(op.outputs[0])})]


def linear_last_axis_to_conv1x1(op: Op, ctx: Ctx) -> list[Op] | None:
    """FULLY_CONNECTED of a rank-4 NHWC device tensor over its last axis -> 1x1 CONV_2D."""
    x, w_name = op.inputs[:2]
    w = ctx.const(w_name)
    shape = ctx.shape(x)
    if ctx.layout != "NHWC" or w is None or len(shape) != 4 or w.shape[1] != shape[3]:
        return None
    o, i = w.shape
    filt = ctx.add_const(f"{w_name}.conv1x1", w.reshape(o, 1, 1, i))
    attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}
    bias = linear_bias(op, ctx, o)
    return [derive(op, "", OpKind.CONV_2D, [x, filt, bias], op.outputs, **attrs, fuse=op.fuse)]


CHANNELS_LAST: list[Rule] = [
    (pat(OpKind.TRANSPOSE), drop_identity_transpose),  # TRANSPOSE(x, identity) -> x
    (pat(OpKind.TRANSPOSE), unit_axes_transpose_to_reshape),  # moves only 1s -> RESHAPE
    (pat(OpKind.FULLY_CONNECTED), linear_last_axis_to_conv1x1),  # FC(NHWC x) -> CONV_2D 1x1
]
