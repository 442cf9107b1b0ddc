"""Elementwise, activation, normalization and data-movement kernels in float32."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from mdla_ir.attrs import (
    AxisAttrs,
    FlattenAttrs,
    GroupNormAttrs,
    NormAttrs,
    PadAttrs,
    ReshapeAttrs,
    SelectAttrs,
    ShuffleAttrs,
    SliceAttrs,
    SoftmaxAttrs,
    StridedSliceAttrs,
    TransposeAttrs,
)
from mdla_ir.functions import COMPARES
from mdla_ir.graph import Op
from mdla_ir.interp.registry import Array, apply_fuse, kernel
from mdla_ir.ops import OpKind

_BINARY = {
    OpKind.ADD: np.add,
    OpKind.SUB: np.subtract,
    OpKind.MUL: np.multiply,
    OpKind.DIV: np.divide,
}


@kernel(*_BINARY)
def binary(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """The ufunc's result is a new array (or a numpy scalar, for 0-d operands): a float32
    array is kept, not copied, and the fused activation writes into it."""
    y = _BINARY[op.kind](args[0], args[1])
    if isinstance(y, np.ndarray) and y.dtype == np.float32:
        return [apply_fuse(y, op.fuse, in_place=True)]
    return [apply_fuse(y.astype(np.float32), op.fuse)]


@kernel(OpKind.PRELU)
def prelu(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """PRELU: y = x where x >= 0, else alpha * x (alpha broadcast to x; a constant alpha is
    LeakyReLU)."""
    x, alpha = args[0], args[1]
    return [np.where(x >= 0, x, x * alpha).astype(np.float32)]


def sigmoid(x: Array) -> Array:
    """1 / (1 + exp(-x)), evaluated without overflow for large |x|."""
    if x.dtype != np.float32:
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(np.float32)
    # float32: the same values as the form above, each by the same operations (1 / (1 + e)
    # where x >= 0, e / (1 + e) elsewhere), in buffers given as out= (so that a 0-d value, a
    # scalar's, stays an array: a ufunc returns a numpy scalar for it, which out= refuses).
    # The numerator is picked by arithmetic, not by a masked copy (np.copyto(where=) on a
    # random mask is 3x the rest together): with m = 1.0 where x >= 0, else 0.0 (NaN: 0.0),
    # e * (1 - m) + m is e * 1 + 0 = e exactly, or e * 0 + 1 = 1 exactly (e = exp(-|x|) is
    # finite for x >= 0); a NaN e stays the same NaN through * 1 and + 0.
    e = np.abs(x, out=np.empty(np.shape(x), np.float32))
    np.negative(e, out=e)
    np.exp(e, out=e)
    d = np.add(e, 1.0, out=np.empty_like(e))  # (1.0 + e: the same sum)
    m = np.greater_equal(x, 0, out=np.empty_like(e), casting="unsafe")
    e *= np.subtract(1.0, m, out=np.empty_like(e))
    e += m
    return np.divide(e, d, out=e)


def _relu6(x: Array) -> Array:
    return np.clip(x, 0.0, 6.0)


def hard_swish(x: Array) -> Array:
    """x * relu6(x + 3) / 6, in x's float type (mdla_quant's C calibration kernel matches it)."""
    return x * _relu6(x + 3.0) / 6.0


_ERF = np.vectorize(math.erf, otypes=[np.float64])

_UNARY: dict[OpKind, Callable[[Array], Array]] = {
    OpKind.RELU: lambda x: np.maximum(x, 0.0),
    OpKind.RELU6: _relu6,
    OpKind.LOGISTIC: sigmoid,
    OpKind.TANH: np.tanh,
    OpKind.SILU: lambda x: x * sigmoid(x),
    OpKind.HARD_SIGMOID: lambda x: _relu6(x + 3.0) / 6.0,
    OpKind.HARD_SWISH: hard_swish,
    OpKind.GELU: lambda x: 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0))),
    OpKind.EXP: np.exp,
    OpKind.LOG: np.log,
    OpKind.SQRT: np.sqrt,
    OpKind.RSQRT: lambda x: 1.0 / np.sqrt(x),
    OpKind.DROPOUT: lambda x: x,
    OpKind.IDENTITY: lambda x: x,
    OpKind.QUANTIZE: lambda x: x,
    OpKind.DEQUANTIZE: lambda x: x,
}


@kernel(*_UNARY)
def unary(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    return [np.asarray(_UNARY[op.kind](args[0]), dtype=np.float32)]


@kernel(OpKind.SOFTMAX)
def softmax(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """exp(beta*(x - max)) / sum(exp(beta*(x - max))) along `axis`."""
    a = SoftmaxAttrs.of(op)
    axis, beta = a.axis, a.beta
    z = beta * (args[0] - args[0].max(axis=axis, keepdims=True))
    e = np.exp(z)
    return [(e / e.sum(axis=axis, keepdims=True)).astype(np.float32)]


def _channel_view(v: Array, rank: int, axis: int) -> Array:
    shape = [1] * rank
    shape[axis] = -1
    return v.reshape(shape)


@kernel(OpKind.BATCH_NORM)
def batch_norm(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """y = (x - mean) / sqrt(var + eps) * gamma + beta on the channel axis."""
    x, mean, var, gamma, beta = args
    axis = 1 if layout == "NCHW" else x.ndim - 1
    scale = gamma / np.sqrt(var.astype(np.float64) + NormAttrs.of(op).eps)
    shift = beta - mean * scale
    y = x * _channel_view(scale, x.ndim, axis) + _channel_view(shift, x.ndim, axis)
    return [y.astype(np.float32)]


@kernel(OpKind.LAYER_NORM)
def layer_norm(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """y = (x - mean) / sqrt(var + eps) * w + b over the trailing normalized dims."""
    x, a = args[0].astype(np.float64), NormAttrs.of(op)
    axes = tuple(range(x.ndim - len(a.normalized_shape or ()), x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + a.eps)
    if len(args) > 1:
        y = y * args[1]
    if len(args) > 2:
        y = y + args[2]
    return [y.astype(np.float32)]


def grouped(x: Array, groups: int, axis: int) -> Array:
    """`x` as (N, A, groups, C/groups, B): channel axis `axis` split into its groups, A the
    axes before it (batch excluded), B those after."""
    n, c = x.shape[0], x.shape[axis]
    a, b = int(np.prod(x.shape[1:axis])), int(np.prod(x.shape[axis + 1 :]))
    return x.reshape(n, a, groups, c // groups, b)


@kernel(OpKind.GROUP_NORM)
def group_norm(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """y = (x - mean) / sqrt(var + eps) * w[c] + b[c], mean and var over each group of
    channels and every non-batch axis (float64, rounded once)."""
    a = GroupNormAttrs.of(op)
    axis = a.axis % args[0].ndim
    x = grouped(args[0].astype(np.float64), a.groups, axis)
    mu = x.mean(axis=(1, 3, 4), keepdims=True)
    var = ((x - mu) ** 2).mean(axis=(1, 3, 4), keepdims=True)
    y = ((x - mu) / np.sqrt(var + a.eps)).reshape(args[0].shape)
    y = y * _channel_view(args[1], y.ndim, axis) + _channel_view(args[2], y.ndim, axis)
    return [y.astype(np.float32)]


@kernel(OpKind.CHANNEL_SHUFFLE)
def channel_shuffle(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """Split `axis` into (groups, C/groups), swap the two, merge back."""
    x, a = args[0], ShuffleAttrs.of(op)
    groups, axis = a.groups, a.axis % x.ndim
    shape = x.shape
    split = (*shape[:axis], groups, shape[axis] // groups, *shape[axis + 1 :])
    return [np.ascontiguousarray(np.swapaxes(x.reshape(split), axis, axis + 1)).reshape(shape)]


@kernel(OpKind.CONCATENATION, OpKind.CONCATENATION_F32)
def concatenation(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    return [np.concatenate(list(args), axis=AxisAttrs.of(op).axis)]


@kernel(OpKind.RESHAPE)
def reshape(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    return [args[0].reshape(ReshapeAttrs.of(op).shape)]


@kernel(OpKind.FLATTEN)
def flatten(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    x = args[0]
    a = FlattenAttrs.of(op)
    start, end = a.start % x.ndim, a.end % x.ndim
    return [x.reshape(*x.shape[:start], -1, *x.shape[end + 1 :])]


@kernel(OpKind.TRANSPOSE)
def transpose(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    return [np.ascontiguousarray(args[0].transpose(TransposeAttrs.of(op).perm))]


@kernel(OpKind.SLICE)
def slice_(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """x[b0:b0+n0, b1:b1+n1, ...] (begin and size per axis, in the graph's layout)."""
    a = SliceAttrs.of(op)
    index = tuple(slice(b, b + n) for b, n in zip(a.begin, a.size, strict=True))
    return [np.ascontiguousarray(args[0][index])]


@kernel(OpKind.STRIDED_SLICE)
def strided_slice(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """out[i0, i1, ...] = x[b0 + i0 * s0, b1 + i1 * s1, ...] (in the graph's layout)."""
    a = StridedSliceAttrs.of(op)
    index = tuple(
        np.arange(n, dtype=np.int64) * s + b
        for b, n, s in zip(a.begin, a.size, a.strides, strict=True)
    )
    return [np.ascontiguousarray(args[0][np.ix_(*index)])]


@kernel(OpKind.PAD)
def pad(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    a = PadAttrs.of(op)
    return [np.pad(args[0], [tuple(p) for p in a.pads], constant_values=a.value)]


@kernel(OpKind.SELECT)
def select(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """a where `x compare y` holds (float32, as torch compares float32 tensors), else b."""
    x, y, a, b = (np.asarray(v, np.float32) for v in args)
    held = COMPARES[SelectAttrs.of(op).compare](x, y)
    return [np.where(held, a, b).astype(np.float32)]
