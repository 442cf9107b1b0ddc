"""Output-shape rules, one per op kind, shared by the verifier and by rewrites that create ops.

`infer(op, in_shapes, layout)` returns the output shapes, or None for kinds with no rule here
(the verifier then only checks that the op's output tensors exist).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mdla_ir.attrs import (
    AdaptivePoolAttrs,
    ArgmaxAttrs,
    Attrs,
    AxisAttrs,
    BlockAttrs,
    ConvAttrs,
    FlattenAttrs,
    GruAttrs,
    MatmulAttrs,
    MeanAttrs,
    PadAttrs,
    PoolAttrs,
    ReshapeAttrs,
    ResizeAttrs,
    SliceAttrs,
    StridedSliceAttrs,
    TransposeAttrs,
)
from mdla_ir.errors import IRError
from mdla_ir.ops import ACTIVATIONS, BINARY, OpKind
from mdla_ir.schema import record_for

Shape = tuple[int, ...]
Rule = Callable[[Any, Sequence[Shape], str], list[Shape]]
RULES: dict[OpKind, Rule] = {}


def rule(*kinds: OpKind) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for kind in kinds:
            RULES[kind] = fn
        return fn

    return register


def broadcast(*shapes: Shape) -> Shape:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError as exc:
        raise IRError(f"shapes {' and '.join(map(str, shapes))} do not broadcast") from exc


def window_out(size: int, k: int, stride: int, dilation: int, pad_lo: int, pad_hi: int) -> int:
    """Output length of a sliding window: floor((size + pads - dilation*(k-1) - 1)/stride) + 1."""
    return (size + pad_lo + pad_hi - dilation * (k - 1) - 1) // stride + 1


def _nhwc(shape: Shape, layout: str) -> tuple[int, int, int, int]:
    if len(shape) != 4:
        raise IRError(f"expected a rank-4 tensor, got shape {shape}")
    n, a, b, c = shape
    return (n, b, c, a) if layout == "NCHW" else (n, a, b, c)


def _layout(n: int, h: int, w: int, c: int, layout: str) -> Shape:
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def conv_weight_hw(kind: OpKind, wshape: Shape, layout: str) -> tuple[int, int, int]:
    """(kernel_h, kernel_w, out_channels) of a CONV_2D/DEPTHWISE_CONV_2D filter."""
    if layout == "NCHW":  # torch: (O, I/groups, kh, kw)
        return wshape[2], wshape[3], wshape[0]
    if kind is OpKind.DEPTHWISE_CONV_2D:  # Neuron: (1, kh, kw, O)
        return wshape[1], wshape[2], wshape[3]
    return wshape[1], wshape[2], wshape[0]  # Neuron: (O, kh, kw, I/groups)


@rule(OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D)
def _conv(a: ConvAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    n, h, w, _ = _nhwc(shapes[0], layout)
    kind = OpKind.DEPTHWISE_CONV_2D if a.depthwise else OpKind.CONV_2D
    kh, kw, cout = conv_weight_hw(kind, shapes[1], layout)
    (sh, sw), (dh, dw) = a.stride, a.dilation
    t, b, left, r = a.padding
    oh, ow = window_out(h, kh, sh, dh, t, b), window_out(w, kw, sw, dw, left, r)
    return [_layout(n, oh, ow, cout, layout)]


@rule(OpKind.AVERAGE_POOL_2D, OpKind.MAX_POOL_2D)
def _pool(a: PoolAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    n, h, w, c = _nhwc(shapes[0], layout)
    (kh, kw), (sh, sw) = a.kernel, a.stride
    t, b, left, r = a.padding
    return [
        _layout(n, window_out(h, kh, sh, 1, t, b), window_out(w, kw, sw, 1, left, r), c, layout)
    ]


@rule(*BINARY)
def _binary(a: Attrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    return [broadcast(shapes[0], shapes[1])]


@rule(
    *ACTIVATIONS,
    OpKind.CLAMP,
    OpKind.DROPOUT,
    OpKind.IDENTITY,
    OpKind.SOFTMAX,
    OpKind.BATCH_NORM,
    OpKind.LAYER_NORM,
    OpKind.GROUP_NORM,
    OpKind.EXP,
    OpKind.LOG,
    OpKind.SQRT,
    OpKind.RSQRT,
    OpKind.RECIPROCAL,
    OpKind.WHERE,
    OpKind.SELECT,
    OpKind.CHANNEL_SHUFFLE,
    OpKind.QUANTIZE,
    OpKind.DEQUANTIZE,
)
def _same(a: Attrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    return [shapes[0]]


@rule(OpKind.CONCATENATION, OpKind.CONCATENATION_F32)
def _concat(attrs: AxisAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    axis = attrs.axis % len(shapes[0])
    for s in shapes[1:]:
        if len(s) != len(shapes[0]) or any(
            a != b for i, (a, b) in enumerate(zip(s, shapes[0], strict=True)) if i != axis
        ):
            raise IRError(f"concatenation inputs {list(shapes)} differ off axis {axis}")
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return [tuple(out)]


@rule(OpKind.RESHAPE)
def _reshape(a: ReshapeAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    new = a.shape
    if int(np.prod(new)) != int(np.prod(shapes[0])):
        raise IRError(f"cannot reshape {shapes[0]} to {new}: element counts differ")
    return [new]


@rule(OpKind.FLATTEN)
def _flatten(a: FlattenAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    s = shapes[0]
    start, end = a.start % len(s), a.end % len(s)
    return [(*s[:start], int(np.prod(s[start : end + 1])), *s[end + 1 :])]


@rule(OpKind.MEAN, OpKind.REDUCE_SUM, OpKind.REDUCE_MAX, OpKind.REDUCE_MIN)
def _mean(a: MeanAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    s = shapes[0]
    axes = {a % len(s) for a in a.axes}
    if a.keepdims:
        return [tuple(1 if i in axes else d for i, d in enumerate(s))]
    return [tuple(d for i, d in enumerate(s) if i not in axes)]


@rule(OpKind.ARGMAX)
def _argmax(a: ArgmaxAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    s = shapes[0]
    axis = a.axis % len(s)
    if a.keepdims:
        return [tuple(1 if i == axis else d for i, d in enumerate(s))]
    return [tuple(d for i, d in enumerate(s) if i != axis)]


@rule(OpKind.PAD)
def _pad(a: PadAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    pads = a.pads
    if len(pads) != len(shapes[0]):
        raise IRError(
            f"PAD has {len(pads)} (before, after) pairs for a rank-{len(shapes[0])} input"
        )
    return [tuple(d + lo + hi for d, (lo, hi) in zip(shapes[0], pads, strict=True))]


@rule(OpKind.SLICE)
def _slice(a: SliceAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    begin, size = a.begin, a.size
    if len(begin) != len(shapes[0]) or len(size) != len(shapes[0]):
        raise IRError(f"SLICE begin {begin} / size {size} do not fit a {shapes[0]} input")
    for b, n, d in zip(begin, size, shapes[0], strict=True):
        if b < 0 or n < 1 or b + n > d:
            raise IRError(f"SLICE begin {tuple(begin)} size {tuple(size)} leaves {shapes[0]}")
    return [tuple(int(n) for n in size)]


@rule(OpKind.STRIDED_SLICE)
def _strided_slice(a: StridedSliceAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    rank = len(shapes[0])
    if not len(a.begin) == len(a.size) == len(a.strides) == rank:
        raise IRError(f"STRIDED_SLICE begin/size/strides do not fit a {shapes[0]} input")
    for b, n, s, d in zip(a.begin, a.size, a.strides, shapes[0], strict=True):
        last = b + (n - 1) * s
        if s == 0 or n < 1 or not (0 <= b < d and 0 <= last < d):
            raise IRError(
                f"STRIDED_SLICE begin {a.begin} size {a.size} strides {a.strides} "
                f"leaves {shapes[0]}"
            )
    return [tuple(int(n) for n in a.size)]


def strided_slice_ends(a: StridedSliceAttrs, shape: Shape) -> tuple[tuple[int, ...], int]:
    """NNAPI/TFLite's `end` operand and `end_mask` for `a` on an input of `shape`: end one step
    past the last index kept (clamped to the axis), a backwards slice reaching index 0 masked
    (an end of -1 would wrap to the last index)."""
    ends, mask = [], 0
    for axis, (b, n, s, d) in enumerate(zip(a.begin, a.size, a.strides, shape, strict=True)):
        end = min(b + n * s, d)
        if end < 0:
            mask |= 1 << axis
            end = 0
        ends.append(end)
    return tuple(ends), mask


@rule(OpKind.TRANSPOSE)
def _transpose(a: TransposeAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    return [tuple(shapes[0][p] for p in a.perm)]


@rule(OpKind.FULLY_CONNECTED)
def _fc(a: Attrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    x, w = shapes[0], shapes[1]
    if x[-1] != w[1]:
        raise IRError(f"FULLY_CONNECTED input width {x[-1]} does not match weights {w}")
    return [(*x[:-1], w[0])]


@rule(OpKind.GRU)
def _gru(a: GruAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    """x (T, I), w_ih [D, 3H, I], w_hh [D, 3H, H], b_ih, b_hh [D, 3H] -> (T, D·H)."""
    x, w_ih, w_hh, b_ih, b_hh = shapes
    dirs = 2 if a.bidirectional else 1
    if len(w_hh) != 3 or w_hh[0] != dirs or w_hh[1] != 3 * w_hh[2]:
        raise IRError(f"GRU w_hh {w_hh} is not [{dirs}, 3H, H]")
    hidden = w_hh[2]
    if len(x) != 2 or tuple(w_ih) != (dirs, 3 * hidden, x[1]):
        raise IRError(f"GRU input {x} and w_ih {w_ih}: want (T, I) and [{dirs}, {3 * hidden}, I]")
    if tuple(b_ih) != (dirs, 3 * hidden) or tuple(b_hh) != (dirs, 3 * hidden):
        raise IRError(f"GRU biases {b_ih}, {b_hh} are not [{dirs}, {3 * hidden}]")
    return [(x[0], dirs * hidden)]


@rule(OpKind.FULLY_CONNECTED_F32)
def _fc_f32(a: Attrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    x, w, b = shapes
    if x[-1] != w[1] or tuple(b) != (w[0],):
        raise IRError(f"FULLY_CONNECTED_F32 input {x}, weights {w}, bias {b} do not fit")
    return [(*x[:-1], w[0])]


@rule(OpKind.ADAPTIVE_AVG_POOL_2D, OpKind.ADAPTIVE_MAX_POOL_2D)
def _adaptive(a: AdaptivePoolAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    n, _, _, c = _nhwc(shapes[0], layout)
    oh, ow = a.output_size
    return [_layout(n, oh, ow, c, layout)]


def _ncdhw(shape: Shape, layout: str) -> Shape:
    """A 5-D activation as NCDHW (an NHWC graph holds it channels-last, NDHWC)."""
    return (shape[0], shape[4], *shape[1:4]) if layout == "NHWC" else shape


def _from_ncdhw(shape: Shape, layout: str) -> Shape:
    return (shape[0], *shape[2:5], shape[1]) if layout == "NHWC" else shape


@rule(OpKind.CONV_3D)
def _conv3d(a: ConvAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    n, _, d, h, w = _ncdhw(shapes[0], layout)
    o, _, kd, kh, kw = shapes[1]
    st, pad, dil = a.stride, a.padding, a.dilation
    outs = [
        window_out(size, k, s, dl, p, p)
        for size, k, s, dl, p in zip((d, h, w), (kd, kh, kw), st, dil, pad, strict=True)
    ]
    return [_from_ncdhw((n, o, *outs), layout)]


@rule(OpKind.MAX_POOL_3D, OpKind.AVERAGE_POOL_3D)
def _pool3d(a: PoolAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    n, c, *sizes = _ncdhw(shapes[0], layout)
    outs = [
        window_out(size, k, s, 1, p, p)
        for size, k, s, p in zip(sizes, a.kernel, a.stride, a.padding, strict=True)
    ]
    return [_from_ncdhw((n, c, *outs), layout)]


@rule(OpKind.BATCH_MATMUL)
def _bmm(attrs: MatmulAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    a, b = shapes[0], shapes[1]
    m = a[-1] if attrs.adj_x else a[-2]
    k_a = a[-2] if attrs.adj_x else a[-1]
    k_b = b[-1] if attrs.adj_y else b[-2]
    n = b[-2] if attrs.adj_y else b[-1]
    if k_a != k_b:
        raise IRError(f"BATCH_MATMUL inner dimensions differ: {a} @ {b}")
    return [(*broadcast(a[:-2], b[:-2]), m, n)]


@rule(OpKind.RESIZE_BILINEAR, OpKind.RESIZE_NEAREST_NEIGHBOR)
def _resize(a: ResizeAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    n, _, _, c = _nhwc(shapes[0], layout)
    oh, ow = a.size
    return [_layout(n, oh, ow, c, layout)]


@rule(OpKind.TRANSPOSE_CONV_2D)
def _transpose_conv(a: ConvAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    """out = (in - 1) * stride + k - pad_before - pad_after per axis; the filter is torch's
    (I, O, KH, KW) in an NCHW graph, Neuron's (O, KH, KW, I) in an NHWC one."""
    n, h, w, _ = _nhwc(shapes[0], layout)
    ws = shapes[1]
    (kh, kw, cout) = (ws[2], ws[3], ws[1]) if layout == "NCHW" else (ws[1], ws[2], ws[0])
    (sh, sw), (t, b, left, r) = a.stride, a.padding
    oh, ow = (h - 1) * sh + kh - t - b, (w - 1) * sw + kw - left - r
    if min(oh, ow) < 1:
        raise IRError(f"TRANSPOSE_CONV_2D pads {(t, b, left, r)} leave no output")
    return [_layout(n, oh, ow, cout, layout)]


@rule(OpKind.DEPTH_TO_SPACE)
def _depth_to_space(a: BlockAttrs, shapes: Sequence[Shape], layout: str) -> list[Shape]:
    n, h, w, c = _nhwc(shapes[0], layout)
    r = a.block_size
    if r < 1 or c % (r * r):
        raise IRError(f"DEPTH_TO_SPACE block {r}: {c} channels are not a multiple of {r * r}")
    return [_layout(n, h * r, w * r, c // (r * r), layout)]


def infer(
    kind: OpKind, attrs: Attrs | Mapping[str, Any], in_shapes: Sequence[Shape], layout: str
) -> list[Shape] | None:
    """The output shapes of a `kind` op; `attrs` its record, or a mapping parsed into it."""
    fn = RULES.get(kind)
    if fn is None:
        return None
    record = record_for(kind, kind.name.lower(), attrs)
    if isinstance(record, ConvAttrs) and kind is OpKind.DEPTHWISE_CONV_2D:
        record = dataclasses.replace(record, depthwise=True)
    return fn(record, in_shapes, layout)
