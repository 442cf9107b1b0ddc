"""A Linear over a flattened H×W×C map as one VALID H×W CONV_2D (VGG, older detectors).

torch.flatten of an (N, C, H, W) map orders features c·H·W + h·W + w, so

    linear(flatten(x))[n, o] = sum_{c,h,w} W[o, c·H·W + h·W + w] · x[n, c, h, w]
                             = conv2d(x, W.reshape(O, C, H, W))[n, o, 0, 0]

a VALID convolution whose kernel is the whole map: the flatten order is folded into the
filter, and the NHWC device graph needs no TRANSPOSE (the layout pass moves the filter to
(O, H, W, C) like any other). Exact in int8 too: the same products in the int32 accumulator,
and each output channel's weight scale is max|W[o]| / 127 either way.

An adaptive average pool whose output size is its input size (VGG's AdaptiveAvgPool2d((7, 7))
on a 7×7 map) averages one element per bin: the identity, dropped.

A permute of the map before the flatten (MTCNN's R-Net and O-Net flatten x.permute(0, 3, 2, 1))
only reorders the features the Linear reads: with t = permute(x, p) and W viewed as
(O, *t.shape[1:]), the filter over x's own axes is W transposed by p's inverse, so the
TRANSPOSE goes into the weights too (batch axis first only).
"""

from __future__ import annotations

import numpy as np

from mdla_ir import Op, OpKind
from mdla_ir.attrs import AdaptivePoolAttrs, TransposeAttrs
from mdla_legalize.rules.base import Ctx, Rule, derive, pat, valid_conv
from mdla_legalize.rules.heads import linear_as_conv, linear_bias


def flatten_linear_to_conv(op: Op, ctx: Ctx) -> list[Op] | None:
    x2, w_name = op.inputs[:2]
    w = ctx.const(w_name)
    flat = ctx.producer(x2)
    if (
        w is None
        or ctx.layout != "NCHW"
        or flat is None
        or flat.kind not in (OpKind.RESHAPE, OpKind.FLATTEN)
        or len(ctx.shape(x2)) != 2
    ):
        return None
    x = flat.inputs[0]
    flat_shape = ctx.shape(x)
    if len(flat_shape) != 4 or ctx.shape(x2) != (flat_shape[0], w.shape[1]):
        return None
    perm = _batch_keeping_permute(ctx, x)
    source = ctx.producer(x).inputs[0] if perm is not None else x  # type: ignore[union-attr]
    shape = ctx.shape(source)
    if shape[2] * shape[3] == 1:
        return None
    if ctx.sole_use(x2):
        ctx.take(x2)
    if perm is not None and ctx.sole_use(x):
        ctx.take(x)
    n, _, h, wd = shape
    o = w.shape[0]
    # the filter over the flattened (possibly permuted) map, indexed by the map's own axes
    filt_data = w.reshape(o, *flat_shape[1:])
    if perm is not None:
        inverse = np.argsort(perm)
        filt_data = filt_data.transpose(0, *(int(a) for a in inverse[1:]))
    (y,) = op.outputs
    y4 = ctx.tensor(f"{y}.as_image", (n, o, 1, 1))
    filt = ctx.add_const(f"{w_name}.conv{h}x{wd}", filt_data)
    return linear_as_conv(op, source, filt, linear_bias(op, ctx, o), y4, n, o)


def flatten_sequence_linear_to_conv(op: Op, ctx: Ctx) -> list[Op] | None:
    """A Linear over a flattened 1-D (N, C, L) activation (an ECG net's head): RESHAPE to its
    H = 1 image (N, C, 1, L), then the VALID (1, L) CONV_2D with the Linear's weights viewed
    (O, C, 1, L), so the flatten order is folded into the filter as for a 2-D map."""
    x2, w_name = op.inputs[:2]
    w, flat = ctx.const(w_name), ctx.producer(x2)
    if w is None or ctx.layout != "NCHW" or flat is None or len(ctx.shape(x2)) != 2:
        return None
    x = flat.inputs[0]
    shape = ctx.shape(x)
    if (
        flat.kind not in (OpKind.RESHAPE, OpKind.FLATTEN)
        or len(shape) != 3
        or shape[2] == 1
        or ctx.shape(x2) != (shape[0], w.shape[1])
    ):
        return None
    if ctx.sole_use(x2):
        ctx.take(x2)
    (n, c, length), o, (y,) = shape, w.shape[0], op.outputs
    image = ctx.tensor(f"{x}.image", (n, c, 1, length))
    filt = ctx.add_const(f"{w_name}.conv1x{length}", w.reshape(o, c, 1, length))
    y4 = ctx.tensor(f"{y}.as_image", (n, o, 1, 1))
    return [
        derive(op, "image", OpKind.RESHAPE, [x], [image], shape=(n, c, 1, length)),
        *linear_as_conv(op, image, filt, linear_bias(op, ctx, o), y4, n, o),
    ]


def _batch_keeping_permute(ctx: Ctx, x: str) -> tuple[int, ...] | None:
    """The perm of the TRANSPOSE producing `x` when it keeps the batch axis first, else None."""
    t = ctx.producer(x)
    if t is None or t.kind is not OpKind.TRANSPOSE or not TransposeAttrs.of(t).perm:
        return None
    perm = TransposeAttrs.of(t).perm
    return perm if len(perm) == 4 and perm[0] == 0 else None


def _swap(ctx: Ctx, name: str) -> Op | None:
    """The TRANSPOSE (0, 2, 1) producing `name`, read by nothing else, or None."""
    t = ctx.producer(name)
    if t is None or t.kind is not OpKind.TRANSPOSE or not ctx.sole_use(name):
        return None
    return t if tuple(TransposeAttrs.of(t).perm) == (0, 2, 1) else None


def token_linear_to_conv1x1(op: Op, ctx: Ctx) -> list[Op] | None:
    """A Linear over a map's pixels as tokens, back to the map (Segformer's MLP decoder):
    x.flatten(2).transpose(1, 2) -> Linear(C, O) -> .transpose(1, 2).reshape(N, O, H, W) is a
    1x1 CONV_2D of x with the Linear's weights (O, C, 1, 1): the same products per pixel,
    exact in int8 as any Linear-as-conv, and no TRANSPOSE (not on the MDLA) left."""
    (y,) = op.outputs
    back = _swap(ctx, op.inputs[0])
    fc = None if back is None else ctx.producer(back.inputs[0])
    if ctx.layout != "NCHW" or len(ctx.shape(y)) != 4 or fc is None or back is None:
        return None
    w = ctx.const(fc.inputs[1]) if fc.kind is OpKind.FULLY_CONNECTED else None
    tokens = None if w is None or not ctx.sole_use(fc.outputs[0]) else _swap(ctx, fc.inputs[0])
    flat = None if tokens is None else ctx.producer(tokens.inputs[0])
    if (
        w is None
        or tokens is None
        or flat is None
        or flat.kind not in (OpKind.RESHAPE, OpKind.FLATTEN)
    ):
        return None
    x = flat.inputs[0]
    if len(ctx.shape(x)) != 4:
        return None
    (n, c, h, wd), (o, _) = ctx.shape(x), w.shape
    if ctx.shape(flat.outputs[0]) != (n, c, h * wd) or ctx.shape(y) != (n, o, h, wd):
        return None
    for name in (op.inputs[0], back.inputs[0], fc.inputs[0]):
        ctx.take(name)
    if ctx.sole_use(tokens.inputs[0]):
        ctx.take(tokens.inputs[0])
    filt = ctx.add_const(f"{fc.inputs[1]}.conv1x1", w.reshape(o, c, 1, 1))
    return [valid_conv(fc, [x, filt, linear_bias(fc, ctx, o)], y)]


def identity_adaptive_pool(op: Op, ctx: Ctx) -> list[Op] | None:
    x, (y,) = op.inputs[0], op.outputs
    hw = ctx.shape(x)[2:] if ctx.layout == "NCHW" else ctx.shape(x)[1:3]
    if AdaptivePoolAttrs.of(op).output_size != tuple(hw) or y in ctx.graph.outputs:
        return None
    ctx.rw.alias[y] = x
    return []


FLATTEN: list[Rule] = [
    (pat(OpKind.ADAPTIVE_AVG_POOL_2D), identity_adaptive_pool),  # ADAPTIVE(x, size of x) -> x
    (pat(OpKind.FULLY_CONNECTED), flatten_linear_to_conv),  # FC(FLATTEN x) -> CONV H×W VALID
    (
        pat(OpKind.FULLY_CONNECTED),
        flatten_sequence_linear_to_conv,
    ),  # FC(FLATTEN (N,C,L)) -> CONV 1×L
    (pat(OpKind.RESHAPE), token_linear_to_conv1x1),  # map(FC(tokens(x))) -> CONV 1×1
]
