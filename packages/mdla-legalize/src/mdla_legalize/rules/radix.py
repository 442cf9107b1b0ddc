"""Split attention over rank-5 tensors as rank-4 ops over channels, which the MDLA maps (its
activations have rank 4 at most).

ResNeSt's and SKNet's split attention (and selective-kernel blocks elsewhere) hold R branches as
one rank-5 tensor [N, R, C, H, W]: `x.reshape(N, R, C, H, W)` of a conv's [N, R*C, H, W] output,
or `torch.stack(branches, 1)`; then a softmax over R of the attention logits, a product and a
sum over R. A rank-5 tensor read from a rank-4 [N, R*C, H, W] one by RESHAPEs has its NCHW
memory: element (r, c) is channel r*C + c. So, on the model-layout graph:

    elementwise(a, b) of [N, R, C, h, w]  -> the same op on the rank-4 tensors, whose broadcast
                                             over H and W is the same; a RESHAPE back for readers
    sum / mean over R                     -> a 1x1 CONV_2D summing channels c, C + c, ... (filter
                                             1 or 1/R at those inputs, 0 elsewhere)
    a stack along axis 1                  -> the CONCATENATION of its pieces along channels
    softmax over an axis of size 2        -> LOGISTIC of differences: softmax(a, b) =
                                             (sigmoid(a - b), sigmoid(b - a)), the differences
                                             a 1x1 CONV_2D with weights +1 and -1

The softmax rule takes any RESHAPE / TRANSPOSE chain from a rank-4 tensor that only permutes its
channels (ResNeSt's rSoftMax, `view(N, K, R, -1).transpose(1, 2)` of the [N, R*C, 1, 1] logits, or
SKNet's `view(N, R, C, 1, 1)`): the conv reads each pair where the chain put it, and its output
holds the softmax in the chain's order, so a RESHAPE gives the softmax's shape back. Over R > 2
branches of a per-sample vector [N, M, 1, 1] (the gate's logits), the groups become rows and
their R values channels ([N, R, M/R, 1], a one-hot TRANSPOSE_CONV_2D), where the MDLA's SOFTMAX
runs over channels, and a (M/R, 1) selection CONV_2D gathers the vector back.

Exactness: the filters' nonzero weights are 1, 1/R or +-1 per output channel, so each channel's
symmetric weight scale is max|w| / 127 and the int8 weights hold them exactly; the conv sums the
same int8 inputs the elementwise ops would. sigmoid(a - b) equals exp(a) / (exp(a) + exp(b)) up
to float32 rounding, and LOGISTIC has SOFTMAX's fixed int8 output (1/256, -128). The gather
back is a selection (the int8 values, bit for bit); the one-hot TRANSPOSE_CONV_2D copies the
logits in float and requantizes them to its own output scale in int8.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdla_ir import Op, OpKind
from mdla_ir.attrs import AxisAttrs, MeanAttrs, SoftmaxAttrs, TransposeAttrs
from mdla_legalize.rules.base import Ctx, Rule, derive, one_hot_conv, pat, valid_conv

Array = np.ndarray[Any, Any]
Folded = tuple[list[Op], str]

_ELEMENTWISE = (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.DIV)
_MOVES = (OpKind.RESHAPE, OpKind.TRANSPOSE)


def _folded(op: Op, ctx: Ctx, name: str, shape: Sequence[int]) -> Folded | None:
    """Rank-5 `name` of `shape` [N, R, C, h, w] as a rank-4 [N, R*C, h, w] tensor with its NCHW
    memory: a constant reshaped, the rank-4 tensor RESHAPEs read it from, or a stack's pieces
    concatenated along channels (the ops that make it, and its name); None otherwise."""
    n, r, c, h, w = shape
    want = (n, r * c, h, w)
    data = ctx.const(name)
    if data is not None:
        full = data.reshape((1,) * (5 - data.ndim) + data.shape)
        full = np.broadcast_to(full, (full.shape[0], r, c, *full.shape[3:]))
        return [], ctx.add_const(
            f"{name}.channels", full.reshape(full.shape[0], r * c, *full.shape[3:])
        )
    t = name
    while ctx.shape(t) != want:
        p = ctx.producer(t)
        if p is not None and p.kind is OpKind.RESHAPE:
            t = p.inputs[0]
            continue
        if p is None or p.kind is not OpKind.CONCATENATION or ctx.shape(t) != tuple(shape):
            return None
        if AxisAttrs.of(p).axis % 5 != 1:
            return None
        ops: list[Op] = []
        pieces = []
        for x in p.inputs:
            s = ctx.shape(x)
            got = _folded(op, ctx, x, (n, s[1], c, h, w)) if len(s) == 5 else None
            if got is None or s[2:] != (c, h, w):
                return None
            ops += got[0]
            pieces.append(got[1])
        out = ctx.tensor(f"{t}.channels", want)
        return [*ops, derive(op, "stack", OpKind.CONCATENATION, pieces, [out], axis=1)], out
    return [], t


def split_elementwise_to_channels(op: Op, ctx: Ctx) -> list[Op] | None:
    """ADD/SUB/MUL/DIV of [N, R, C, h, w] tensors (channel splits of rank-4 ones, or constants)
    -> the op on the rank-4 tensors, and a RESHAPE of its result to rank 5."""
    (y,) = op.outputs
    shape = ctx.shape(y)
    if ctx.layout != "NCHW" or len(shape) != 5:
        return None
    n, r, c, h, w = shape
    ops: list[Op] = []
    inputs = []
    for x in op.inputs:
        s = ctx.shape(x)
        if ctx.const(x) is None and (len(s) != 5 or s[:3] != (n, r, c)):
            return None
        full = (1,) * (5 - len(s)) + tuple(s)
        got = _folded(op, ctx, x, (n, r, c, *full[3:]))
        if got is None:
            return None
        ops += got[0]
        inputs.append(got[1])
    t = ctx.tensor(f"{y}.channels", (n, r * c, h, w))
    return [
        *ops,
        op.with_(inputs=tuple(inputs), outputs=(t,)),
        derive(op, "split", OpKind.RESHAPE, [t], [y], shape=shape),
    ]


def split_sum_to_conv(op: Op, ctx: Ctx) -> list[Op] | None:
    """REDUCE_SUM / MEAN over axis 1 of [N, R, C, h, w] (a channel split) -> a 1x1 CONV_2D of
    the rank-4 [N, R*C, h, w] tensor: output channel c sums inputs c, C + c, ... (times 1/R for
    the mean)."""
    x, (y,) = op.inputs[0], op.outputs
    shape = ctx.shape(x)
    a = MeanAttrs.of(op)
    if ctx.layout != "NCHW" or len(shape) != 5 or {ax % 5 for ax in a.axes} != {1}:
        return None
    n, r, c, h, w = shape
    got = _folded(op, ctx, x, shape)
    if got is None:
        return None
    ops, x4 = got
    filt = np.zeros((c, r * c, 1, 1), np.float32)
    value = 1.0 if op.kind is OpKind.REDUCE_SUM else 1.0 / r
    for i in range(r):
        filt[np.arange(c), i * c + np.arange(c)] = value
    wname = ctx.add_const(f"{op.name}.radix_sum", filt)
    bias = ctx.add_const(f"{op.name}.zero_bias", np.zeros(c, np.float32))
    out = y if ctx.shape(y) == (n, c, h, w) else ctx.tensor(f"{y}.channels", (n, c, h, w))
    ops.append(valid_conv(op, [x4, wname, bias], out, fuse="NONE", suffix="radix_sum"))
    if out != y:
        ops.append(derive(op, "", OpKind.RESHAPE, [out], [y], shape=ctx.shape(y)))
    return ops


def _chain_kinds(ctx: Ctx, x: str) -> set[OpKind]:
    """The kinds of the RESHAPE / TRANSPOSE chain that makes `x`."""
    kinds = set()
    while (p := ctx.producer(x)) is not None and p.kind in _MOVES:
        kinds.add(p.kind)
        x = p.inputs[0]
    return kinds


def _channel_source(ctx: Ctx, x: str) -> tuple[str, list[int]] | None:
    """The farthest rank-4 [N, M, H, W] tensor a RESHAPE / TRANSPOSE chain moves into `x` by
    permuting its channels only, and the permutation: x's flat element m*H*W + p (per sample)
    is the source's channel order[m] at pixel p."""
    chain: list[Op] = []
    t = x
    while (p := ctx.producer(t)) is not None and p.kind in _MOVES:
        chain.append(p)
        t = p.inputs[0]
    for start in range(len(chain), 0, -1):
        src = chain[start - 1].inputs[0]
        s = ctx.shape(src)
        if len(s) != 4:
            continue
        idx = np.arange(math.prod(s)).reshape(s)
        for o in reversed(chain[:start]):
            if o.kind is OpKind.TRANSPOSE:
                idx = idx.transpose(TransposeAttrs.of(o).perm)
            else:
                idx = idx.reshape(ctx.shape(o.outputs[0]))
        n, m, h, w = s
        flat = idx.reshape(n, m, h * w)
        order = flat[0, :, 0] // (h * w)
        base = np.arange(math.prod(s)).reshape(n, m, h * w)
        if sorted(order.tolist()) == list(range(m)) and np.array_equal(flat, base[:, order]):
            return src, [int(i) for i in order]
    return None


def pair_softmax_to_logistic(op: Op, ctx: Ctx) -> list[Op] | None:
    """SOFTMAX over an axis of size 2 of a tensor moved (RESHAPE / TRANSPOSE) from a rank-4 one's
    channels -> 1x1 CONV_2D of the differences (+beta, -beta), LOGISTIC, RESHAPE to its shape;
    when the softmax is rank 5 or a TRANSPOSE made its input (neither maps as it is)."""
    x, (y,) = op.inputs[0], op.outputs
    shape = ctx.shape(x)
    a = SoftmaxAttrs.of(op)
    axis = a.axis % len(shape)
    if ctx.layout != "NCHW" or shape[axis] != 2 or axis == 0:
        return None
    if len(shape) <= 4 and OpKind.TRANSPOSE not in _chain_kinds(ctx, x):
        return None  # a rank-4 softmax read through RESHAPEs at most is left as it is
    found = _channel_source(ctx, x)
    if found is None:
        return None
    src, order = found
    n, m, h, w = ctx.shape(src)
    stride = math.prod(shape[axis + 1 :])  # between an element and its pair, in x's flat order
    if stride % (h * w):
        return None
    step = stride // (h * w)
    filt = np.zeros((m, m, 1, 1), np.float32)
    for i in range(m):
        partner = i + step if (i // step) % 2 == 0 else i - step
        filt[i, order[i]] += a.beta
        filt[i, order[partner]] -= a.beta
    wname = ctx.add_const(f"{op.name}.pair_difference", filt)
    bias = ctx.add_const(f"{op.name}.zero_bias", np.zeros(m, np.float32))
    diff = ctx.tensor(f"{y}.difference", (n, m, h, w))
    prob = ctx.tensor(f"{y}.channels", (n, m, h, w))
    return [
        valid_conv(op, [src, wname, bias], diff, fuse="NONE", suffix="difference"),
        derive(op, "logistic", OpKind.LOGISTIC, [diff], [prob]),
        derive(op, "", OpKind.RESHAPE, [prob], [y], shape=ctx.shape(y)),
    ]


def group_softmax_to_channels(op: Op, ctx: Ctx) -> list[Op] | None:
    """SOFTMAX over an axis of size R > 2 of a tensor moved (RESHAPE / TRANSPOSE) from a
    per-sample vector [N, M, 1, 1]'s channels (ResNeSt's rSoftMax at radix 4) -> the vector's
    G = M / R groups as rows, each group's R values as channels ([N, R, G, 1], a
    TRANSPOSE_CONV_2D with one-hot weights and kernel = stride = (G, 1)), SOFTMAX over the
    channels (which the MDLA maps), and back to the vector in the softmax's order (a (G, 1)
    selection CONV_2D), RESHAPE to its shape. When the softmax is rank 5 or a TRANSPOSE made
    its input, as the 2-way rule."""
    x, (y,) = op.inputs[0], op.outputs
    shape = ctx.shape(x)
    a = SoftmaxAttrs.of(op)
    axis = a.axis % len(shape)
    r = shape[axis]
    if ctx.layout != "NCHW" or r <= 2 or axis == 0:
        return None
    if len(shape) <= 4 and OpKind.TRANSPOSE not in _chain_kinds(ctx, x):
        return None
    found = _channel_source(ctx, x)
    if found is None or ctx.shape(found[0])[2:] != (1, 1):
        return None
    src, order = found
    n, m = ctx.shape(src)[:2]
    g = m // r
    stride = math.prod(shape[axis + 1 :])
    e = np.arange(m)  # x's flat element (per sample): its branch and its group
    branch, group = (e // stride) % r, (e // (stride * r)) * stride + e % stride
    spread = np.zeros((m, r, g, 1), np.float32)  # TRANSPOSE_CONV_2D's (I, O, KH, KW)
    spread[order, branch, group, 0] = 1.0
    gather = np.zeros((m, r, g, 1), np.float32)  # CONV_2D's (O, I, KH, KW)
    gather[e, branch, group, 0] = 1.0
    rows = ctx.tensor(f"{y}.groups", (n, r, g, 1))
    soft = ctx.tensor(f"{y}.group_softmax", (n, r, g, 1))
    vec = ctx.tensor(f"{y}.channels", (n, m, 1, 1))
    kernel = {"stride": (g, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1}
    return [
        derive(
            op,
            "groups",
            OpKind.TRANSPOSE_CONV_2D,
            [src, ctx.add_const(f"{op.name}.spread", spread), _zeros(op, ctx, r)],
            [rows],
            **kernel,
            fuse="NONE",
        ),
        derive(op, "softmax", OpKind.SOFTMAX, [rows], [soft], axis=1, beta=a.beta),
        one_hot_conv(op, ctx, soft, vec, gather, stride=(1, 1), suffix="gather"),
        derive(op, "", OpKind.RESHAPE, [vec], [y], shape=ctx.shape(y)),
    ]


def _zeros(op: Op, ctx: Ctx, n: int) -> str:
    return ctx.add_const(f"{op.name}.zero_bias", np.zeros(n, np.float32))


RADIX: list[Rule] = [
    (pat(*_ELEMENTWISE), split_elementwise_to_channels),  # OP(x5, a5) -> RESHAPE(OP(x4, a4))
    (pat(OpKind.REDUCE_SUM, OpKind.MEAN), split_sum_to_conv),  # SUM_R(x5) -> CONV 1x1 (0/1 w)
    (pat(OpKind.SOFTMAX), pair_softmax_to_logistic),  # SOFTMAX_2(x) -> LOGISTIC(CONV(+-1 w))
    (pat(OpKind.SOFTMAX), group_softmax_to_channels),  # SOFTMAX_R(x) -> TCONV, SOFTMAX, CONV
]
