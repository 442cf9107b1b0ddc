"""Padding: PyTorch's symmetric pads against the device's implicit, TF-asymmetric SAME.

A device whose entry says `padding = "same-valid"` (the MDLA, as measured: the seed's stride-2
layers matched PyTorch only as PAD + VALID) gets only pads that are VALID or exactly the
TF-SAME pads for the layer's input size (total = max((ceil(H/s)-1)*s + d*(k-1) + 1 - H, 0),
top = total // 2, the odd one after). For stride 1 and odd kernels PyTorch's symmetric
(k-1)/2 is exactly that, so those layers keep their pads; a stride-2 layer whose PyTorch pads
differ gets an explicit zero PAD and a VALID op. Conversely, a model's own explicit PAD
followed by a VALID conv (TF-style "static same padding") folds back into the conv when the
pads are the SAME pads, saving an op. Zero padding is exact for convolutions; for MAX_POOL_2D
only when its input is non-negative (after a fused RELU/RELU6), where a zero never wins.
"""

from __future__ import annotations

import dataclasses

from mdla_ir import Op, OpKind
from mdla_ir.attrs import ConvAttrs, PadAttrs, PoolAttrs, window_of
from mdla_ir.shapes import conv_weight_hw
from mdla_legalize.rules.base import Ctx, Rule, derive, pat

CONVS = (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D)


def same_pads(size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TF SAME padding (before, after) of one spatial axis."""
    out = -(-size // stride)
    total = max((out - 1) * stride + dilation * (k - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def _hw(ctx: Ctx, name: str) -> tuple[int, int]:
    s = ctx.shape(name)
    return (s[2], s[3]) if ctx.layout == "NCHW" else (s[1], s[2])


def _window(op: Op, ctx: Ctx) -> tuple[tuple[int, int], tuple[int, int]]:
    """((kh, kw), (dh, dw)) of a conv or pool."""
    if op.kind in CONVS:
        kh, kw, _ = conv_weight_hw(op.kind, ctx.shape(op.inputs[1]), ctx.layout)
        dh, dw = ConvAttrs.of(op).dilation
        return (kh, kw), (dh, dw)
    kh, kw = PoolAttrs.of(op).kernel
    return (kh, kw), (1, 1)


def device_same_pads(op: Op, ctx: Ctx, src: str | None = None) -> tuple[int, int, int, int]:
    """The (top, bottom, left, right) TF-SAME pads of `op` over input `src` (default its own)."""
    (h, w), ((kh, kw), (dh, dw)) = _hw(ctx, src or op.inputs[0]), _window(op, ctx)
    sh, sw = window_of(op).stride
    return (*same_pads(h, kh, sh, dh), *same_pads(w, kw, sw, dw))


def padding_ok(op: Op, ctx: Ctx) -> bool:
    """True when the device accepts `op`'s pads as they are."""
    spec = ctx.spec(op.kind)
    pads = window_of(op).padding
    if spec is None or spec.padding != "same-valid" or not any(pads):
        return True
    return pads == device_same_pads(op, ctx)


def _pads4(pads: tuple[int, ...]) -> tuple[int, int, int, int]:
    t, b, left, r = pads
    return t, b, left, r


def _pad_op(op: Op, ctx: Ctx, pads4: tuple[int, int, int, int]) -> tuple[Op, str]:
    x = op.inputs[0]
    t, b, left, r = pads4
    pads = (
        ((0, 0), (0, 0), (t, b), (left, r))
        if ctx.layout == "NCHW"
        else ((0, 0), (t, b), (left, r), (0, 0))
    )
    shape = [d + lo + hi for d, (lo, hi) in zip(ctx.shape(x), pads, strict=True)]
    padded = ctx.tensor(f"{x}.padded", shape)
    return derive(op, "pad", OpKind.PAD, [x], [padded], pads=pads, value=0.0), padded


def conv_pad_to_pad_valid(op: Op, ctx: Ctx) -> list[Op] | None:
    if padding_ok(op, ctx):
        return None
    a = window_of(op)
    pad, padded = _pad_op(op, ctx, _pads4(a.padding))
    valid = dataclasses.replace(a, padding=(0, 0, 0, 0))
    return [pad, op.with_(inputs=(padded, *op.inputs[1:]), attrs=valid)]


def _non_negative(name: str, ctx: Ctx) -> bool:
    """A ReLU's (or logistic's) output, or a RESHAPE, max pool or zero PAD of one (the second
    pool of a 3-D max pool over frames reads the first's)."""
    p = ctx.producer(name)
    if p is None:
        return False
    if p.kind in (OpKind.RESHAPE, OpKind.MAX_POOL_2D) or (
        p.kind is OpKind.PAD and PadAttrs.of(p).value == 0.0
    ):
        return _non_negative(p.inputs[0], ctx)
    return p.fuse in ("RELU", "RELU6") or p.kind in (OpKind.RELU, OpKind.RELU6, OpKind.LOGISTIC)


def maxpool_pad_to_pad_valid(op: Op, ctx: Ctx) -> list[Op] | None:
    if padding_ok(op, ctx) or not _non_negative(op.inputs[0], ctx):
        return None
    a = window_of(op)
    pad, padded = _pad_op(op, ctx, _pads4(a.padding))
    return [pad, op.with_(inputs=(padded,), attrs=dataclasses.replace(a, padding=(0, 0, 0, 0)))]


def maxpool_pad_to_same_then_subsample(op: Op, ctx: Ctx) -> list[Op] | None:
    """A padded max pool over an input of either sign (a zero PAD could win there, e.g. after
    a LeakyReLU or a bare BatchNorm): the same window at stride 1 with the device's TF-SAME pads
    (which never win), then a 1x1 VALID max pool at the stride taking every s-th output.

    At stride 1, TF-SAME's window at t is [t - (k-1)//2, t + k - 1 - (k-1)//2] clipped to the
    input; PyTorch's output j at stride s with leading pad p is [s*j - p, s*j - p + k - 1]
    clipped likewise: the same pixels at t = s*j when p == (k-1)//2 on both axes, and the
    strided pick keeps exactly the outputs PyTorch has when their counts agree."""
    a = PoolAttrs.of(op)
    if padding_ok(op, ctx) or _non_negative(op.inputs[0], ctx) or a.stride == (1, 1):
        return None
    (h, w), (oh, ow) = _hw(ctx, op.inputs[0]), _hw(ctx, op.outputs[0])
    t, _, left, _ = a.padding
    for n, n_out, k, s, lead in zip((h, w), (oh, ow), a.kernel, a.stride, (t, left), strict=True):
        if lead != (k - 1) // 2 or (n - 1) // s + 1 != n_out:
            return None
    pads = (*same_pads(h, a.kernel[0], 1), *same_pads(w, a.kernel[1], 1))
    x, (y,) = op.inputs[0], op.outputs
    dense = ctx.tensor(f"{y}.stride1", ctx.shape(x))
    pool = dataclasses.replace(a, stride=(1, 1), padding=pads, fuse="NONE")
    pick = dataclasses.replace(a, kernel=(1, 1), padding=(0, 0, 0, 0))
    return [
        op.with_(name=f"{op.name}.stride1", outputs=(dense,), attrs=pool),
        op.with_(name=f"{op.name}.pick", inputs=(dense,), attrs=pick),
    ]


def pad_into_same_conv(op: Op, ctx: Ctx) -> list[Op] | None:
    """CONV VALID(PAD(x)) -> CONV(x) with those pads, when they are the device's SAME pads."""
    src = op.inputs[0]
    pad = ctx.producer(src)
    a = ConvAttrs.of(op)
    if (
        any(a.padding)
        or pad is None
        or pad.kind is not OpKind.PAD
        or PadAttrs.of(pad).value != 0.0
        or not ctx.sole_use(src)
    ):
        return None
    p = PadAttrs.of(pad).pads
    hw = (2, 3) if ctx.layout == "NCHW" else (1, 2)
    if len(p) != 4 or any(p[i] != (0, 0) for i in range(4) if i not in hw):
        return None
    pads4 = _pads4((*p[hw[0]], *p[hw[1]]))
    spec = ctx.spec(op.kind)
    if (spec is None or spec.padding == "same-valid") and pads4 != device_same_pads(
        op, ctx, pad.inputs[0]
    ):
        return None
    ctx.take(src)
    same = dataclasses.replace(a, padding=pads4)
    return [op.with_(inputs=(pad.inputs[0], *op.inputs[1:]), attrs=same)]


PADDING: list[Rule] = [
    (pat(*CONVS), pad_into_same_conv),  # CONV VALID(PAD(x)) -> CONV SAME(x)
    (pat(*CONVS), conv_pad_to_pad_valid),  # CONV(pads != SAME) -> CONV VALID(PAD(x))
    (pat(OpKind.MAX_POOL_2D), maxpool_pad_to_pad_valid),  # MAXPOOL(pads) -> MAXPOOL VALID(PAD x)
    (pat(OpKind.MAX_POOL_2D), maxpool_pad_to_same_then_subsample),  # -> MAXPOOL s1, 1x1 stride s
]
