"""Video front-ends on the MDLA: Conv3d and MaxPool3d as 2-D ops over frames held as a batch.

After the layout pass a clip is NDHWC, (1, T, H, W, C). The frames become the batch of a 4-D
NHWC tensor, (T, H, W, C), which costs only RESHAPEs (the memory order is the same).

CONV_3D, temporal kernel kt, stride 1, pad pt (the 3-D conv of LipNet: kt = 3, pt = 1):
  out[t] = b + sum_k conv2d(x[t + k - pt], w[:, :, k])       (x = 0 outside the clip)
         = conv2d(stack[t], w')   with stack[t] = [x[t-pt], ..., x[t-pt+kt-1]] on channels
  1. RESHAPE x (1, T, H, W, C) -> (1, T, H*W, C): time on the H axis, the pixels on W.
  2. CONV_2D "taps": kernel (kt, 1), pads (pt, pt, 0, 0), identity filter
     taps[k*C + c, k, 0, c] = 1  ->  (1, T', H*W, kt*C). The conv's zero padding supplies the
     frames before and after the clip; each output channel copies one input element (exact).
  3. RESHAPE -> (T', H, W, kt*C): the stacked frames, tap-major channels.
  4. CONV_2D with the 3-D filter (O, C, kt, kh, kw) -> (O, kh, kw, kt*C) (tap-major), the
     spatial stride/pads/dilation of the 3-D conv -> (T', OH, OW, O).
  5. RESHAPE -> (1, T', OH, OW, O).
MAX_POOL_3D with kernel (1, kh, kw), stride (1, ...), no temporal pad: RESHAPE to frames,
MAX_POOL_2D, RESHAPE back. Then elementwise ops move inside the RESHAPE pairs, the pairs cancel
(mdla_ir canonicalize_reshapes) and `squeeze_boundary` folds the clip's 5-D input/output
RESHAPEs into the graph boundary, so every op left is 4-D and on the MDLA.
"""

from __future__ import annotations

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.attrs import ConvAttrs, PoolAttrs, ReshapeAttrs
from mdla_ir.passes import PassResult, Rewriter
from mdla_legalize.rules.base import Array, Ctx, Rule, derive, pat

ELEMENTWISE = (OpKind.RELU, OpKind.RELU6, OpKind.LOGISTIC, OpKind.TANH, OpKind.HARD_SWISH)


def _foldable(op: Op, ctx: Ctx) -> bool:
    """Temporal stride and dilation 1, one group, a single clip, less padding than taps."""
    w = ctx.const(op.inputs[1])
    a = ConvAttrs.of(op)
    st, dt, pt = a.stride[0], a.dilation[0], a.padding[0]
    return (
        ctx.layout == "NHWC"
        and w is not None
        and (st, dt) == (1, 1)
        and pt < w.shape[2]
        and a.groups == 1
        and ctx.shape(op.inputs[0])[0] == 1
    )


def taps_filter(channels: int, taps: int) -> Array:
    """CONV_2D filter (taps*C, taps, 1, C): output channel k*C + c copies tap k of channel c."""
    filt = np.zeros((taps * channels, taps, 1, channels), np.float32)
    for k in range(taps):
        filt[k * channels + np.arange(channels), k, 0, np.arange(channels)] = 1.0
    return filt


def conv3d_to_conv2d(op: Op, ctx: Ctx) -> list[Op] | None:
    if not _foldable(op, ctx):
        return None
    x, w_name = op.inputs[:2]
    w = ctx.graph.const(w_name)
    a = ConvAttrs.of(op)
    (_, sh, sw), (pt, ph, pw), (_, dh, dw) = a.stride, a.padding, a.dilation
    (_, t, h, wd, c), (o, _, kt, kh, kw) = ctx.shape(x), w.shape
    (y,) = op.outputs
    _, t2, oh, ow, _ = ctx.shape(y)
    filt = w.transpose(0, 3, 4, 2, 1).reshape(o, kh, kw, kt * c)  # (O, kh, kw, kt*C) tap-major
    rows = ctx.tensor(f"{x}.rows", (1, t, h * wd, c))
    stacked = ctx.tensor(f"{y}.taps", (1, t2, h * wd, kt * c))
    frames = ctx.tensor(f"{y}.stacked", (t2, h, wd, kt * c))
    out = ctx.tensor(f"{y}.frames", (t2, oh, ow, o))
    taps = [
        rows,
        ctx.add_const(f"{op.name}.taps", taps_filter(c, kt)),
        ctx.add_const(f"{op.name}.taps_bias", np.zeros(kt * c, np.float32)),
    ]
    conv = {"groups": 1, "fuse": "NONE"}
    return [
        derive(op, "rows", OpKind.RESHAPE, [x], [rows], shape=(1, t, h * wd, c)),
        derive(
            op,
            "taps",
            OpKind.CONV_2D,
            taps,
            [stacked],
            stride=(1, 1),
            dilation=(1, 1),
            padding=(pt, pt, 0, 0),
            **conv,
        ),
        derive(op, "frames", OpKind.RESHAPE, [stacked], [frames], shape=(t2, h, wd, kt * c)),
        derive(
            op,
            "",
            OpKind.CONV_2D,
            [frames, ctx.add_const(f"{w_name}.frames", filt), *op.inputs[2:]],
            [out],
            stride=(sh, sw),
            dilation=(dh, dw),
            padding=(ph, ph, pw, pw),
            **conv,
        ),
        derive(op, "clip", OpKind.RESHAPE, [out], [y], shape=ctx.shape(y)),
    ]


def maxpool3d_to_maxpool2d(op: Op, ctx: Ctx) -> list[Op] | None:
    a = PoolAttrs.of(op)
    (kt, kh, kw), (st, sh, sw), (pt, ph, pw) = a.kernel, a.stride, a.padding
    x, (y,) = op.inputs[0], op.outputs
    if ctx.layout != "NHWC" or (kt, st, pt) != (1, 1, 0) or ctx.shape(x)[0] != 1:
        return None
    _, t, h, w, c = ctx.shape(x)
    _, _, oh, ow, _ = ctx.shape(y)
    frames = ctx.tensor(f"{x}.frames", (t, h, w, c))
    pooled = ctx.tensor(f"{y}.frames", (t, oh, ow, c))
    return [
        derive(op, "frames", OpKind.RESHAPE, [x], [frames], shape=(t, h, w, c)),
        derive(
            op,
            "",
            OpKind.MAX_POOL_2D,
            [frames],
            [pooled],
            kernel=(kh, kw),
            stride=(sh, sw),
            padding=(ph, ph, pw, pw),
            fuse="NONE",
        ),
        derive(op, "clip", OpKind.RESHAPE, [pooled], [y], shape=ctx.shape(y)),
    ]


def elementwise_into_reshape(op: Op, ctx: Ctx) -> list[Op] | None:
    """U(RESHAPE(x)) -> RESHAPE(U(x)): lets the RESHAPE pairs of a clip meet and cancel."""
    src = op.inputs[0]
    r = ctx.producer(src)
    if r is None or r.kind is not OpKind.RESHAPE or not ctx.sole_use(src):
        return None
    ctx.take(src)
    inner = ctx.tensor(f"{op.outputs[0]}.unshaped", ctx.shape(r.inputs[0]))
    return [
        op.with_(inputs=(r.inputs[0],), outputs=(inner,)),
        r.with_(inputs=(inner,), outputs=op.outputs),
    ]


FRAMES: list[Rule] = [
    (pat(OpKind.CONV_3D), conv3d_to_conv2d),  # CONV_3D(x) -> RESHAPE(CONV_2D(RESHAPE(taps(x))))
    (pat(OpKind.MAX_POOL_3D), maxpool3d_to_maxpool2d),  # MAXPOOL3D -> RESHAPE(MAXPOOL2D(RESHAPE))
    (pat(*ELEMENTWISE), elementwise_into_reshape),  # U(RESHAPE(x)) -> RESHAPE(U(x))
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
