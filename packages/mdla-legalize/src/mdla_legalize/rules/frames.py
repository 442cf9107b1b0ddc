"""Video on the MDLA: Conv3d and 3-D pools as 2-D ops over frames held as a batch.

After the layout pass a clip is NDHWC, (N, T, H, W, C). The frames become the batch of a 4-D
NHWC tensor, (N*T, H, W, C), which costs only RESHAPEs (the memory order is the same).

CONV_3D, temporal kernel kt, stride st, dilation dt, pad pt, any groups:
  out[t] = b + sum_k conv2d(x[t*st + k*dt - pt], w[:, :, k])       (x = 0 outside the clip)
         = conv2d(stack[t], w')   with stack[t] = [x[t*st - pt], ..., x[t*st - pt + (kt-1)*dt]]
  1. RESHAPE x (N, T, H, W, C) -> (N, T, H*W, C): time on the H axis, the pixels on W.
  2. CONV_2D "taps": kernel ((kt-1)*dt + 1, 1), stride (st, 1), pads (pt, pt, 0, 0), identity
     filter taps[k*C + c, k*dt, 0, c] = 1 (the dilation in its zero rows, so the conv itself is
     undilated) -> (N, T', H*W, kt*C). The conv's zero padding
     supplies the frames before and after the clip; each output channel copies one input
     element (exact in int8: a selection conv). A per-frame conv (kt = 1, st = 1, pt = 0) has
     no taps conv.
  3. RESHAPE -> (N*T', H, W, kt*C): the stacked frames, tap-major channels.
  4. CONV_2D with the 3-D filter (O, C, kt, kh, kw) -> (O, kh, kw, kt*C) (tap-major), the
     spatial stride/pads/dilation of the 3-D conv -> (N*T', OH, OW, O). A grouped (or
     channel-wise) filter is made dense, block-diagonal (zeros outside each group, exact as
     `grouped_conv_to_dense`). The sum over taps is the conv's own int32 accumulation: one
     requantization, as run_int8 computes it.
  5. RESHAPE -> (N, T', OH, OW, O).
MAX_POOL_3D / AVERAGE_POOL_3D: separable, a 2-D pool over each frame, then a (kt, 1) pool over
(N, T, OH*OW, C). Then elementwise ops (and residual ADDs of two clips of like frames) move
inside the RESHAPE pairs, the pairs cancel (mdla_ir canonicalize_reshapes) and
`squeeze_boundary` folds a single clip's (N = 1) 5-D input/output RESHAPEs into the graph
boundary, so every op left is 4-D and on the MDLA.
"""

from __future__ import annotations

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.attrs import ConvAttrs, PoolAttrs, ReshapeAttrs
from mdla_ir.passes import PassResult, Rewriter
from mdla_legalize.rules.base import Array, Ctx, Rule, derive, pat
from mdla_legalize.rules.channels import block_diagonal
from mdla_legalize.rules.heads import (
    avgpool_include_pad_to_pad,
    avgpool_unpadded_count,
    global_avgpool_to_mean,
)

ELEMENTWISE = (OpKind.RELU, OpKind.RELU6, OpKind.LOGISTIC, OpKind.TANH, OpKind.HARD_SWISH)
BINARY = (OpKind.ADD, OpKind.SUB, OpKind.MUL)


def taps_filter(channels: int, taps: int, dilation: int = 1) -> Array:
    """CONV_2D filter (taps*C, (taps-1)*dilation + 1, 1, C): output channel k*C + c copies
    row k*dilation (tap k) of channel c. A temporal dilation is spread into the kernel's zero
    rows, so the taps conv itself is undilated (a dilated CONV_2D is unmeasured on silicon)."""
    rows = (taps - 1) * dilation + 1
    filt = np.zeros((taps * channels, rows, 1, channels), np.float32)
    for k in range(taps):
        filt[k * channels + np.arange(channels), k * dilation, 0, np.arange(channels)] = 1.0
    return filt


def _taps(op: Op, ctx: Ctx, x: str, kt: int, t2: int) -> tuple[list[Op], str]:
    """The clip's frames stacked kt deep on channels, tap-major: (N, T', H*W, kt*C), by a
    selection CONV_2D (kernel (kt, 1), dilated into zero rows) with the temporal stride and
    pads."""
    a = ConvAttrs.of(op)
    n, t, h, w, c = ctx.shape(x)
    rows = ctx.tensor(f"{x}.rows", (n, t, h * w, c))
    stacked = ctx.tensor(f"{op.outputs[0]}.taps", (n, t2, h * w, kt * c))
    inputs = [
        rows,
        ctx.add_const(f"{op.name}.taps", taps_filter(c, kt, a.dilation[0])),
        ctx.add_const(f"{op.name}.taps_bias", np.zeros(kt * c, np.float32)),
    ]
    pt = a.padding[0]
    return [
        derive(op, "rows", OpKind.RESHAPE, [x], [rows], shape=(n, t, h * w, c)),
        derive(
            op,
            "taps",
            OpKind.CONV_2D,
            inputs,
            [stacked],
            stride=(a.stride[0], 1),
            dilation=(1, 1),
            padding=(pt, pt, 0, 0),
            groups=1,
            fuse="NONE",
        ),
    ], stacked


def conv3d_to_conv2d(op: Op, ctx: Ctx) -> list[Op] | None:
    w = ctx.const(op.inputs[1])
    if ctx.layout != "NHWC" or w is None:
        return None
    x, w_name = op.inputs[:2]
    a = ConvAttrs.of(op)
    (st, sh, sw), (pt, ph, pw), (_, dh, dw) = a.stride, a.padding, a.dilation
    n, _, h, wd, c = ctx.shape(x)
    if a.groups > 1:
        w = block_diagonal(w, a.groups, c)
    (o, _, kt, kh, kw), (y,) = w.shape, op.outputs
    _, t2, oh, ow, _ = ctx.shape(y)
    filt = w.transpose(0, 3, 4, 2, 1).reshape(o, kh, kw, kt * c)  # (O, kh, kw, kt*C) tap-major
    ops: list[Op] = []
    src = x
    if (kt, st, pt) != (1, 1, 0):
        ops, src = _taps(op, ctx, x, kt, t2)
    frames = ctx.tensor(f"{y}.stacked", (n * t2, h, wd, kt * c))
    out = ctx.tensor(f"{y}.frames", (n * t2, oh, ow, o))
    return [
        *ops,
        derive(op, "frames", OpKind.RESHAPE, [src], [frames], shape=ctx.shape(frames)),
        derive(
            op,
            "",
            OpKind.CONV_2D,
            [frames, ctx.add_const(f"{w_name}.frames", filt), *op.inputs[2:]],
            [out],
            stride=(sh, sw),
            dilation=(dh, dw),
            padding=(ph, ph, pw, pw),
            groups=1,
            fuse="NONE",
        ),
        derive(op, "clip", OpKind.RESHAPE, [out], [y], shape=ctx.shape(y)),
    ]


def _pool2d(op: Op, part: str, src: str, dst: str, axes: slice) -> Op:
    """The 2-D pool of `op` over its window's `axes` (1:3 per frame, 0:1 over time)."""
    a = PoolAttrs.of(op)
    kernel, stride, pads = a.kernel[axes], a.stride[axes], a.padding[axes]
    if len(kernel) == 1:  # over time: (kt, 1) on (N, T, OH*OW, C)
        kernel, stride, pads = (kernel[0], 1), (stride[0], 1), (pads[0], 0)
    kind = OpKind.MAX_POOL_2D if op.kind is OpKind.MAX_POOL_3D else OpKind.AVERAGE_POOL_2D
    return derive(
        op,
        part,
        kind,
        [src],
        [dst],
        kernel=kernel,
        stride=stride,
        padding=(pads[0], pads[0], pads[1], pads[1]),
        fuse="NONE",
        count_include_pad=a.count_include_pad,
    )


def pool3d_to_pool2d(op: Op, ctx: Ctx) -> list[Op] | None:
    """A 3-D max or average pool is separable: a 2-D pool over each frame's (h, w) window, then
    one over the frames' temporal window ((kt, 1) on (N, T, OH*OW, C)). The max is the max of
    maxes; the average is the average of the frames' averages (the count is a product: the
    window's, or the real elements' of a box clipped by the padding, either way)."""
    if ctx.layout != "NHWC":
        return None
    a = PoolAttrs.of(op)
    x, (y,) = op.inputs[0], op.outputs
    n, t, h, w, c = ctx.shape(x)
    _, t2, oh, ow, _ = ctx.shape(y)
    frames = ctx.tensor(f"{x}.frames", (n * t, h, w, c))
    ops = [derive(op, "frames", OpKind.RESHAPE, [x], [frames], shape=(n * t, h, w, c))]
    src = frames
    if (a.kernel[1:], a.stride[1:], a.padding[1:]) != ((1, 1), (1, 1), (0, 0)):
        src = ctx.tensor(f"{y}.frames", (n * t, oh, ow, c))
        ops.append(_pool2d(op, "", frames, src, slice(1, 3)))
    if (a.kernel[0], a.stride[0], a.padding[0]) != (1, 1, 0):
        rows = ctx.tensor(f"{y}.rows", (n, t, oh * ow, c))
        ops.append(derive(op, "rows", OpKind.RESHAPE, [src], [rows], shape=(n, t, oh * ow, c)))
        src = ctx.tensor(f"{y}.time", (n, t2, oh * ow, c))
        ops.append(_pool2d(op, "time", rows, src, slice(0, 1)))
    return [*ops, derive(op, "clip", OpKind.RESHAPE, [src], [y], shape=ctx.shape(y))]


def elementwise_into_reshape(op: Op, ctx: Ctx) -> list[Op] | None:
    """U(RESHAPE(x)) -> RESHAPE(U(x)): lets the RESHAPE pairs of a clip meet and cancel. A clip
    (a 5-D RESHAPE of frames) that other ops also read stays for them: U reads the frames."""
    src = op.inputs[0]
    r = ctx.producer(src)
    if r is None or r.kind is not OpKind.RESHAPE:
        return None
    if not ctx.sole_use(src):
        return _from_frames(op, ctx, [r])
    ctx.take(src)
    inner = ctx.tensor(f"{op.outputs[0]}.unshaped", ctx.shape(r.inputs[0]))
    return [
        op.with_(inputs=(r.inputs[0],), outputs=(inner,)),
        r.with_(inputs=(inner,), outputs=op.outputs),
    ]


def _clip_of_frames(op: Op | None, ctx: Ctx) -> bool:
    return (
        op is not None
        and op.kind is OpKind.RESHAPE
        and len(ctx.shape(op.outputs[0])) == 5
        and len(ctx.shape(op.inputs[0])) == 4
    )


def _from_frames(op: Op, ctx: Ctx, clips: list[Op]) -> list[Op] | None:
    """op on the clips' frames, then one RESHAPE to the clip (the clips stay for other readers;
    one no op reads is dropped)."""
    if not all(_clip_of_frames(r, ctx) for r in clips):
        return None
    if len({ctx.shape(r.inputs[0]) for r in clips}) != 1:
        return None
    (y,) = op.outputs
    inner = ctx.tensor(f"{y}.frames", ctx.shape(clips[0].inputs[0]))
    return [
        op.with_(inputs=tuple(r.inputs[0] for r in clips), outputs=(inner,)),
        derive(op, "clip", OpKind.RESHAPE, [inner], [y], shape=ctx.shape(y)),
    ]


def reshape_past_clip(op: Op, ctx: Ctx) -> list[Op] | None:
    """RESHAPE(clip) -> RESHAPE(frames) when other ops read the clip too (a residual block's
    output feeds the next block's convs and its shortcut): each reader skips the 5-D tensor."""
    r = ctx.producer(op.inputs[0])
    if r is None or ctx.sole_use(op.inputs[0]) or not _clip_of_frames(r, ctx):
        return None
    return [op.with_(inputs=(r.inputs[0],))]


def binary_into_reshape(op: Op, ctx: Ctx) -> list[Op] | None:
    """B(RESHAPE(x), RESHAPE(y)) -> RESHAPE(B(x, y)) for two clips of like frames (a residual
    ADD of a video block)."""
    if len(op.inputs) != 2 or ctx.shape(op.inputs[0]) != ctx.shape(op.inputs[1]):
        return None
    clips = [ctx.producer(n) for n in op.inputs]
    return _from_frames(op, ctx, [r for r in clips if r is not None]) if all(clips) else None


FRAMES: list[Rule] = [
    (pat(OpKind.CONV_3D), conv3d_to_conv2d),  # CONV_3D(x) -> RESHAPE(CONV_2D(RESHAPE(taps(x))))
    (
        pat(OpKind.MAX_POOL_3D, OpKind.AVERAGE_POOL_3D),
        pool3d_to_pool2d,
    ),  # POOL3D -> RESHAPE(POOL2D(RESHAPE)) per axis
    (pat(*ELEMENTWISE), elementwise_into_reshape),  # U(RESHAPE(x)) -> RESHAPE(U(x))
    (pat(*BINARY), binary_into_reshape),  # B(RESHAPE(x), RESHAPE(y)) -> RESHAPE(B(x, y))
    (pat(OpKind.RESHAPE), reshape_past_clip),  # RESHAPE(clip read by others) -> RESHAPE(frames)
    # the frames' average pools in the device's form, as the model-layout POOLS table does
    (pat(OpKind.AVERAGE_POOL_2D), global_avgpool_to_mean),
    (pat(OpKind.AVERAGE_POOL_2D), avgpool_include_pad_to_pad),
    (pat(OpKind.AVERAGE_POOL_2D), avgpool_unpadded_count),
]


def _squeezed(shape: tuple[int, ...], rank: int) -> tuple[int, ...] | None:
    k = len(shape) - rank
    return shape[k:] if k > 0 and all(d == 1 for d in shape[:k]) else None


def squeeze_boundary(graph: Graph, rank: int = 4) -> PassResult:
    """A clip's 5-D boundary tensor (1, *s) that only RESHAPEs touch becomes s, with the leading
    unit dim squeezed in `Graph.boundary` (a perm longer than the rank); RESHAPEs that become
    identities disappear.
    """
    users = graph.consumers()
    producers = graph.producers()
    shapes: dict[str, tuple[int, ...]] = {}
    for n in (*graph.inputs, *graph.outputs):
        s = _squeezed(graph.tensors[n].shape, rank)
        touched = users.get(n, []) + ([producers[n]] if n in producers else [])
        if s is not None and n in graph.boundary and all(o.kind is OpKind.RESHAPE for o in touched):
            shapes[n] = s
    if not shapes:
        return PassResult(graph, False)
    rw = Rewriter(graph)
    for n, s in shapes.items():
        rw.tensors[n] = Tensor(n, s)
    for op in rw:
        src, out = op.inputs[0] if op.inputs else "", op.outputs[0]
        if op.kind is OpKind.RESHAPE and out in shapes:
            producer = rw.producer(src)
            if rw.tensors[src].shape == shapes[out] and producer is not None and rw.sole_use(src):
                rw.replace_producer(src, producer.with_(outputs=(out,)))
                continue
            op = op.with_(attrs=ReshapeAttrs(shape=shapes[out]))
        elif op.kind is OpKind.RESHAPE and src in shapes and rw.tensors[out].shape == shapes[src]:
            rw.alias[out] = src
            continue
        rw.emit(op)
    return rw.finish()
