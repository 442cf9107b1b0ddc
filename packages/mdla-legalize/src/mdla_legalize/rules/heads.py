"""Classifier heads and pools: Linear as a 1x1 CONV_2D, adaptive/average pools as MEAN/AVG/PAD.

The MDLA rejects FULLY_CONNECTED with per-channel weights (the 1280->1000 classifier, silicon
fact 3), so a Linear over pooled features becomes a 1x1 CONV_2D over those features held as a
1x1 image: FC(x[N,I]) == RESHAPE(CONV_2D 1x1(RESHAPE(x)[N,I,1,1]))[N,O]. The RESHAPE pair around
it collapses against the head's flatten (mdla_ir canonicalize_reshapes).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mdla_ir import Op, OpKind
from mdla_ir.attrs import AdaptivePoolAttrs, MeanAttrs, PoolAttrs, ResizeAttrs
from mdla_ir.interp.resample import nearest_index
from mdla_legalize.rules.base import Ctx, Rule, derive, pat, valid_conv


def _image(n: int, c: int, layout: str) -> tuple[int, int, int, int]:
    return (n, c, 1, 1) if layout == "NCHW" else (n, 1, 1, c)


def linear_bias(op: Op, ctx: Ctx, out_features: int) -> str:
    """The Linear's bias tensor, or a zero one (CONV_2D always takes a bias)."""
    if len(op.inputs) > 2:
        return op.inputs[2]
    return ctx.add_const(f"{op.name}.zero_bias", np.zeros(out_features, np.float32))


def linear_as_conv(op: Op, x4: str, filt: str, bias: str, y4: str, n: int, o: int) -> list[Op]:
    """The Linear `op` as a `valid_conv` to the (N, O, 1, 1) image `y4`, then the RESHAPE to
    the Linear's (N, O) output."""
    (y,) = op.outputs
    return [
        valid_conv(op, [x4, filt, bias], y4),
        derive(op, "flatten", OpKind.RESHAPE, [y4], [y], shape=(n, o)),
    ]


def linear_to_conv1x1(op: Op, ctx: Ctx) -> list[Op] | None:
    x, w_name = op.inputs[:2]
    w = ctx.const(w_name)
    if w is None or len(ctx.shape(x)) != 2:
        return None
    (n, i), o = ctx.shape(x), w.shape[0]
    filt = w.reshape(o, i, 1, 1) if ctx.layout == "NCHW" else w.reshape(o, 1, 1, i)
    (y,) = op.outputs
    x4 = ctx.tensor(f"{x}.as_image", _image(n, i, ctx.layout))
    y4 = ctx.tensor(f"{y}.as_image", _image(n, o, ctx.layout))
    to_image = derive(op, "to_image", OpKind.RESHAPE, [x], [x4], shape=_image(n, i, ctx.layout))
    conv = ctx.add_const(f"{w_name}.conv1x1", filt)
    return [to_image, *linear_as_conv(op, x4, conv, linear_bias(op, ctx, o), y4, n, o)]


def _spatial(shape: tuple[int, ...], layout: str) -> tuple[int, int]:
    return (shape[2], shape[3]) if layout == "NCHW" else (shape[1], shape[2])


def adaptive_pool_to_avgpool(op: Op, ctx: Ctx) -> list[Op] | None:
    """Uniform bins (H % OH == 0 and W % OW == 0): AVERAGE_POOL_2D with kernel = stride = H/OH.
    (PyTorch's bins floor(i*H/OH)..ceil((i+1)*H/OH) are then exactly those windows.)"""
    h, w = _spatial(ctx.shape(op.inputs[0]), ctx.layout)
    oh, ow = AdaptivePoolAttrs.of(op).output_size
    if h % oh or w % ow:
        return None
    if (oh, ow) == (1, 1):
        return [op.with_(kind=OpKind.MEAN, attrs=MeanAttrs(axes=_axes(ctx.layout), keepdims=True))]
    k = (h // oh, w // ow)
    return [op.with_(kind=OpKind.AVERAGE_POOL_2D, attrs=PoolAttrs(kernel=k, stride=k))]


def adaptive_pool_upsample_to_resize(op: Op, ctx: Ctx) -> list[Op] | None:
    """Bins of one pixel each (an output at least the input's size on both axes, e.g. AlexNet's
    AdaptiveAvgPool2d((6, 6)) on a 1x1 map at small inputs): each output copies pixel
    floor(i*H/OH), for an average and a max alike; RESIZE_NEAREST_NEIGHBOR when its source
    indices are exactly those (checked in its own float32 arithmetic, as the interpreter's)."""
    h, w = _spatial(ctx.shape(op.inputs[0]), ctx.layout)
    oh, ow = AdaptivePoolAttrs.of(op).output_size
    for n_in, n_out in ((h, oh), (w, ow)):
        i = np.arange(n_out)
        start, end = i * n_in // n_out, -(-(i + 1) * n_in // n_out)
        if (oh, ow) == (h, w) or np.any(end - start != 1):
            return None
        if not np.array_equal(nearest_index(n_in, n_out, False, False), start):
            return None
    size = (oh, ow)
    return [op.with_(kind=OpKind.RESIZE_NEAREST_NEIGHBOR, attrs=ResizeAttrs(size=size))]


def adaptive_pool_uneven_to_bands(op: Op, ctx: Ctx) -> list[Op] | None:
    """Uneven bins (VGG's AdaptiveAvgPool2d((7, 7)) on a 2x2 map, UPerNet's 2x2 -> 3x3): the
    average over bin rows [a, b) x columns [c, d) is separable, rows first, then columns
    (`_axis_bins`). Exact: each weight is 1/(b - a) or 0 (the band conv's int8 filter holds it
    exactly, scale (1/(b - a))/127), the row stage's averages are the column stage's inputs."""
    x, (y,) = op.inputs[0], op.outputs
    shape = ctx.shape(x)
    oh, ow = AdaptivePoolAttrs.of(op).output_size
    if ctx.layout != "NCHW" or len(shape) != 4 or (shape[2] % oh == 0 and shape[3] % ow == 0):
        return None
    n, c, h, w = shape
    if w == ow:
        return _axis_bins(op, ctx, x, 2, oh, y)
    if h == oh:
        return _axis_bins(op, ctx, x, 3, ow, y)
    rows = ctx.tensor(f"{y}.rows", (n, c, oh, w))
    return _axis_bins(op, ctx, x, 2, oh, rows) + _axis_bins(op, ctx, rows, 3, ow, y)


def _axis_bins(op: Op, ctx: Ctx, x: str, axis: int, n_out: int, y: str) -> list[Op]:
    """Adaptive average bins of NCHW `x` along `axis` (2: rows, 3: columns) into `y`: one
    AVERAGE_POOL_2D when they are even; else one DEPTHWISE_CONV_2D per distinct bin [a, b),
    its kernel the whole axis with 1/(b - a) at a..b-1 (one output row or column), and a
    CONCATENATION along the axis in the output's order (a bin shared by outputs read again)."""
    shape = ctx.shape(x)
    n_in, c = shape[axis], shape[1]
    tag = "rows" if axis == 2 else "columns"
    if n_in % n_out == 0:
        k = (n_in // n_out, 1) if axis == 2 else (1, n_in // n_out)
        return [derive(op, tag, OpKind.AVERAGE_POOL_2D, [x], [y], kernel=k, stride=k)]
    i = np.arange(n_out)
    bins = list(zip(i * n_in // n_out, -(-(i + 1) * n_in // n_out), strict=True))
    ops: list[Op] = []
    made: dict[tuple[int, int], str] = {}
    one = tuple(1 if d == axis else s for d, s in enumerate(shape))
    bias = ctx.add_const(f"{op.name}.zero_bias", np.zeros(c, np.float32))
    for a, b in dict.fromkeys((int(a), int(b)) for a, b in bins):
        band = np.zeros(n_in, np.float32)
        band[a:b] = 1.0 / (b - a)
        kernel = band.reshape(1, 1, n_in, 1) if axis == 2 else band.reshape(1, 1, 1, n_in)
        filt = ctx.add_const(f"{op.name}.{tag}_{a}_{b}", np.repeat(kernel, c, axis=0))
        made[a, b] = ctx.tensor(f"{y}.{tag}_{a}_{b}", one)
        ops.append(
            derive(
                op,
                f"{tag}_{a}_{b}",
                OpKind.DEPTHWISE_CONV_2D,
                [x, filt, bias],
                [made[a, b]],
                stride=(1, 1),
                padding=(0, 0, 0, 0),
                dilation=(1, 1),
                groups=1,
                multiplier=1,
                fuse="NONE",
            )
        )
    pieces = [made[int(a), int(b)] for a, b in bins]
    return [*ops, derive(op, tag, OpKind.CONCATENATION, pieces, [y], axis=axis)]


def _axes(layout: str) -> tuple[int, int]:
    return (2, 3) if layout == "NCHW" else (1, 2)


def global_avgpool_to_mean(op: Op, ctx: Ctx) -> list[Op] | None:
    """An average pool whose one window is the whole unpadded image is MEAN over H, W."""
    hw = _spatial(ctx.shape(op.inputs[0]), ctx.layout)
    a = PoolAttrs.of(op)
    if a.kernel != hw or any(a.padding) or a.fuse != "NONE":
        return None
    return [op.with_(kind=OpKind.MEAN, attrs=MeanAttrs(axes=_axes(ctx.layout), keepdims=True))]


def avgpool_include_pad_to_pad(op: Op, ctx: Ctx) -> list[Op] | None:
    """count_include_pad with padding: zero PAD, then a VALID pool (whose count is the window)."""
    a = PoolAttrs.of(op)
    if not a.count_include_pad or not any(a.padding):
        return None
    x = op.inputs[0]
    t, b, left, r = a.padding
    pads = (
        ((0, 0), (0, 0), (t, b), (left, r))
        if ctx.layout == "NCHW"
        else ((0, 0), (t, b), (left, r), (0, 0))
    )
    padded = ctx.tensor(
        f"{x}.padded", [d + lo + hi for d, (lo, hi) in zip(ctx.shape(x), pads, strict=True)]
    )
    return [
        derive(op, "pad", OpKind.PAD, [x], [padded], pads=pads, value=0.0),
        op.with_(
            inputs=(padded,),
            attrs=dataclasses.replace(a, padding=(0, 0, 0, 0), count_include_pad=False),
        ),
    ]


def avgpool_unpadded_count(op: Op, ctx: Ctx) -> list[Op] | None:
    """Without padding both counts are the window size: state Neuron's (exclude-pad) form."""
    a = PoolAttrs.of(op)
    if not a.count_include_pad or any(a.padding):
        return None
    return [op.with_(attrs=dataclasses.replace(a, count_include_pad=False))]


def clip_mean_to_pool(op: Op, ctx: Ctx) -> list[Op] | None:
    """MEAN of a 5-D clip (N, C, T, H, W) over (H, W) or (T, H, W) -> AVERAGE_POOL_3D with that
    whole window (made 2-D pools over frames later), then a RESHAPE dropping the reduced axes
    without keepdims: a video head's `x.mean((2, 3, 4))` maps as AdaptiveAvgPool3d(1) does."""
    x, (y,), m = op.inputs[0], op.outputs, MeanAttrs.of(op)
    shape = ctx.shape(x)
    if ctx.layout != "NCHW" or len(shape) != 5:
        return None
    axes = tuple(sorted(a % 5 for a in m.axes))
    if axes not in ((3, 4), (2, 3, 4)):
        return None
    n, c, t, h, w = shape
    k = (t if axes[0] == 2 else 1, h, w)
    pool = {"kernel": k, "stride": k, "padding": (0, 0, 0), "count_include_pad": False}
    if m.keepdims:
        return [derive(op, "", OpKind.AVERAGE_POOL_3D, [x], [y], **pool)]
    pooled = ctx.tensor(f"{y}.pooled", (n, c, t // k[0], 1, 1))
    return [
        derive(op, "pool", OpKind.AVERAGE_POOL_3D, [x], [pooled], **pool),
        derive(op, "", OpKind.RESHAPE, [pooled], [y], shape=ctx.shape(y)),
    ]


POOLS: list[Rule] = [
    (pat(OpKind.FULLY_CONNECTED), linear_to_conv1x1),  # FC(x) -> RESHAPE(CONV_2D 1×1(RESHAPE x))
    (pat(OpKind.ADAPTIVE_AVG_POOL_2D), adaptive_pool_to_avgpool),  # ADAPTIVE -> MEAN / AVG_POOL
    (pat(OpKind.ADAPTIVE_AVG_POOL_2D), adaptive_pool_upsample_to_resize),  # 1-pixel bins -> NN
    (pat(OpKind.ADAPTIVE_MAX_POOL_2D), adaptive_pool_upsample_to_resize),
    (pat(OpKind.ADAPTIVE_AVG_POOL_2D), adaptive_pool_uneven_to_bands),  # -> band convs, concat
    (pat(OpKind.AVERAGE_POOL_2D), global_avgpool_to_mean),  # AVG(whole image) -> MEAN(H, W)
    (pat(OpKind.AVERAGE_POOL_2D), avgpool_include_pad_to_pad),  # AVG(+pad) -> AVG VALID(PAD x)
    (pat(OpKind.AVERAGE_POOL_2D), avgpool_unpadded_count),  # AVG(+pad, no pads) -> AVG(-pad)
    (pat(OpKind.MEAN), clip_mean_to_pool),  # MEAN(clip, (T,) H, W) -> AVERAGE_POOL_3D (+RESHAPE)
]
