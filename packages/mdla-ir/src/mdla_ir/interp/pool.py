"""Pools and reductions in float32: MAX/AVERAGE_POOL_2D, adaptive average pool, MEAN, 3-D max pool.

MAX_POOL_2D: out = max over the window of in_pad, padding never wins (it is -inf).
AVERAGE_POOL_2D: out = sum(window of zero-padded in) / count, where count is the window size
(count_include_pad, PyTorch's default) or the number of real input elements in the window
(Neuron's semantics, count_include_pad = False).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mdla_ir.attrs import AdaptivePoolAttrs, ArgmaxAttrs, MeanAttrs, PoolAttrs
from mdla_ir.graph import Op
from mdla_ir.interp.conv import windows
from mdla_ir.interp.registry import Array, apply_fuse, from_nhwc, kernel, to_nhwc
from mdla_ir.ops import OpKind


def _pad(x: Array, padding: Sequence[int], value: float) -> Array:
    t, b, left, r = padding
    return np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)), constant_values=value)


@kernel(OpKind.MAX_POOL_2D)
def max_pool_2d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    x, a = to_nhwc(args[0], layout), PoolAttrs.of(op)
    y = window_max(_pad(x, a.padding, -np.inf) if any(a.padding) else x, a.kernel, a.stride)
    return [from_nhwc(apply_fuse(y.astype(np.float32, copy=False), op.fuse), layout)]


def window_max(x: Array, kernel_hw: Sequence[int], stride: Sequence[int]) -> Array:
    """The max over each (kh, kw) window of the padded NHWC `x` (N, OH, OW, C), in x's dtype:
    one in-place maximum per window offset over a strided view of all the windows' values
    there (nine passes over contiguous rows for 3x3), not a reduction over the window axes of
    `windows`' view, which walks each window's nine values with a stride apart and ran 3x
    slower on a ResNet's 114x114x64 pool. A max is exact, so either order gives its value."""
    (kh, kw), (sh, sw) = kernel_hw, stride
    oh, ow = (x.shape[1] - kh) // sh + 1, (x.shape[2] - kw) // sw + 1
    if oh <= 0 or ow <= 0:  # no window fits: the view's own error
        return windows(x, kernel_hw, stride, (1, 1)).max(axis=(4, 5))  # type: ignore[no-any-return]
    out: Array | None = None
    for i in range(kh):
        for j in range(kw):
            view = x[:, i : i + sh * (oh - 1) + 1 : sh, j : j + sw * (ow - 1) + 1 : sw]
            if out is None:
                out = view.copy()
            else:
                np.maximum(out, view, out=out)
    assert out is not None
    return out


@kernel(OpKind.AVERAGE_POOL_2D)
def average_pool_2d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    x, a = to_nhwc(args[0], layout), PoolAttrs.of(op)
    kernel_hw, stride, padding = a.kernel, a.stride, a.padding
    total = windows(_pad(x, padding, 0.0), kernel_hw, stride, (1, 1)).sum(axis=(4, 5))
    if a.count_include_pad:
        count: Array | float = float(kernel_hw[0] * kernel_hw[1])
    else:
        ones = np.ones((1, x.shape[1], x.shape[2], 1), dtype=np.float32)
        count = windows(_pad(ones, padding, 0.0), kernel_hw, stride, (1, 1)).sum(axis=(4, 5))
    y = (total / count).astype(np.float32)
    return [from_nhwc(apply_fuse(y, op.fuse), layout)]


@kernel(OpKind.ADAPTIVE_AVG_POOL_2D, OpKind.ADAPTIVE_MAX_POOL_2D)
def adaptive_avg_pool_2d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """PyTorch's bins: rows floor(i*H/OH) .. ceil((i+1)*H/OH), averaged (or their max)."""
    reduce = np.max if op.kind is OpKind.ADAPTIVE_MAX_POOL_2D else np.mean
    x = to_nhwc(args[0], layout)
    n, h, w, c = x.shape
    oh, ow = AdaptivePoolAttrs.of(op).output_size
    out = np.empty((n, oh, ow, c), dtype=np.float32)
    for i in range(oh):
        r0, r1 = (i * h) // oh, math.ceil((i + 1) * h / oh)
        for j in range(ow):
            c0, c1 = (j * w) // ow, math.ceil((j + 1) * w / ow)
            out[:, i, j] = reduce(x[:, r0:r1, c0:c1], axis=(1, 2))
    return [from_nhwc(out, layout)]


@kernel(OpKind.MEAN)
def mean(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    a = MeanAttrs.of(op)
    return [args[0].mean(axis=a.axes, keepdims=a.keepdims, dtype=np.float64).astype(np.float32)]


@kernel(OpKind.ARGMAX)
def argmax(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """The index of the largest value along `axis` (numpy's: the first on ties), as float32."""
    a = ArgmaxAttrs.of(op)
    axis = a.axis
    idx = np.argmax(args[0], axis=axis)
    if a.keepdims:
        idx = np.expand_dims(idx, axis)
    return [idx.astype(np.float32)]


@kernel(OpKind.MAX_POOL_3D)
def max_pool_3d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """NCDHW max over (kd, kh, kw) windows with -inf padding."""
    x = args[0].transpose(0, 4, 1, 2, 3) if layout == "NHWC" else args[0]  # NDHWC -> NCDHW
    a = PoolAttrs.of(op)
    kernel3, stride3, pad3 = a.kernel, a.stride, a.padding
    xp = np.pad(x, ((0, 0), (0, 0), *((p, p) for p in pad3)), constant_values=-np.inf)
    view = np.lib.stride_tricks.sliding_window_view(xp, tuple(kernel3), axis=(2, 3, 4))
    view = view[:, :, :: stride3[0], :: stride3[1], :: stride3[2]]
    y = view.max(axis=(5, 6, 7)).astype(np.float32)
    return [np.ascontiguousarray(y.transpose(0, 2, 3, 4, 1)) if layout == "NHWC" else y]


@kernel(OpKind.AVERAGE_POOL_3D)
def average_pool_3d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """NCDHW mean over (kd, kh, kw) windows of the zero-padded input, divided by the window
    size (count_include_pad) or by its taps inside the input."""
    x = args[0].transpose(0, 4, 1, 2, 3) if layout == "NHWC" else args[0]  # NDHWC -> NCDHW
    a = PoolAttrs.of(op)

    def window_sums(v: Array) -> Array:
        vp = np.pad(v, ((0, 0), (0, 0), *((p, p) for p in a.padding)))
        view = np.lib.stride_tricks.sliding_window_view(vp, tuple(a.kernel), axis=(2, 3, 4))
        view = view[:, :, :: a.stride[0], :: a.stride[1], :: a.stride[2]]
        return view.sum(axis=(5, 6, 7), dtype=np.float64)  # type: ignore[no-any-return]

    if a.count_include_pad:
        count: Array | float = float(np.prod(a.kernel))
    else:
        count = window_sums(np.ones((1, 1, *x.shape[2:]), np.float32))
    y = (window_sums(x) / count).astype(np.float32)
    return [np.ascontiguousarray(y.transpose(0, 2, 3, 4, 1)) if layout == "NHWC" else y]
