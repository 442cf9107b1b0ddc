"""Converters for elementwise, activation and data-movement ops, and the three dispatch tables:
torch module type, function, and Tensor method -> converter.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from mdla_ir.importer import functions as fn
from mdla_ir.importer.adaptive_max import f_adaptive_maxpool, m_adaptive_maxpool
from mdla_ir.importer.attention import scaled_dot_product_attention
from mdla_ir.importer.batchnorm import f_batch_norm
from mdla_ir.importer.broadcast import expand, repeat
from mdla_ir.importer.clamp import f_clamp, m_hardtanh
from mdla_ir.importer.context import Converter, Ctx, Unsupported
from mdla_ir.importer.conv1d import (
    f_adaptive_avgpool1d,
    f_avgpool1d,
    f_maxpool1d,
    m_adaptive_avgpool1d,
    m_avgpool1d,
    m_batchnorm1d,
    m_conv1d,
    m_maxpool1d,
)
from mdla_ir.importer.elementwise import absolute, f_normalize, filled, neg, power, square
from mdla_ir.importer.index_put import index_put
from mdla_ir.importer.layers import (
    adaptive,
    f_conv2d,
    f_linear,
    f_maxpool,
    f_pad,
    m_batchnorm,
    m_conv2d,
    m_conv3d,
    m_layernorm,
    m_linear,
    m_maxpool,
    m_maxpool3d,
    m_pad,
)
from mdla_ir.importer.norms import f_group_norm, f_instance_norm, m_group_norm, m_instance_norm
from mdla_ir.importer.pairwise import pairwise
from mdla_ir.importer.pool3d import (
    f_adaptive_avgpool3d,
    f_avgpool3d,
    m_adaptive_avgpool3d,
    m_avgpool3d,
)
from mdla_ir.importer.pools import f_avgpool2d, m_avgpool2d
from mdla_ir.importer.prelu import f_leaky_relu, f_prelu, m_leaky_relu, m_prelu
from mdla_ir.importer.reduce import extreme, pick_values, reduction, values_attr
from mdla_ir.importer.reflected import commuted, truediv
from mdla_ir.importer.resample import f_interpolate, m_upsample
from mdla_ir.importer.shuffle import f_pixel_shuffle, m_pixel_shuffle
from mdla_ir.importer.slicing import narrow, split_pieces
from mdla_ir.importer.stacked import over_stack, stack
from mdla_ir.importer.strided import flip, m_mode_pad, roll
from mdla_ir.importer.transpose3d import refuse_conv_transpose3d
from mdla_ir.importer.transpose_conv import f_conv_transpose2d, m_conv_transpose2d
from mdla_ir.importer.unshuffle import m_pixel_unshuffle
from mdla_ir.importer.where import compare, masked_fill, to_float, where, where_method
from mdla_ir.ops import OpKind


def unary(kind: OpKind, **attrs: Any) -> Converter:
    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        c.emit(kind, [c.ref(args[0] if args else kw["input"])], **attrs)

    return convert


def m_gelu(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    approx = m.approximate if m is not None else c.value(kw.get("approximate", "none"))
    if approx != "none":
        raise Unsupported("GELU(approximate='tanh')")
    c.emit(OpKind.GELU, [c.ref(args[0])])


def _softmax(c: Ctx, x: Any, dim: Any) -> None:
    if dim is None:
        raise Unsupported("softmax without an explicit dim")
    c.emit(OpKind.SOFTMAX, [c.ref(x)], axis=int(dim), beta=1.0)


def binary(kind: OpKind) -> Converter:
    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        a, b = (args[0] if args else kw["input"]), (args[1] if len(args) > 1 else kw["other"])
        if c.value(kw.get("alpha", 1)) != 1:
            raise Unsupported("add/sub with alpha != 1")
        if kw.get("rounding_mode") is not None:
            raise Unsupported("div with a rounding_mode")
        c.emit(kind, [c.ref(a), c.ref(b)], fuse="NONE")

    return convert


def _flatten(c: Ctx, x: Any, start: int = 0, end: int = -1) -> None:
    c.emit(OpKind.FLATTEN, [c.ref(x)], start=int(start), end=int(end))


def _flatten_call(c: Ctx, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "start_dim", "end_dim"), args, strict=False)) | kw
    _flatten(c, a["input"], int(c.value(a.get("start_dim", 0))), int(c.value(a.get("end_dim", -1))))


def _reshape(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    node = c.node
    assert node is not None
    c.emit(
        OpKind.RESHAPE,
        [c.ref(args[0])],
        shape=tuple(int(d) for d in node.meta["tensor_meta"].shape),
    )


def _mean(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    x = args[0]
    dim = c.value(args[1] if len(args) > 1 else kw.get("dim"))
    keep = bool(c.value(args[2] if len(args) > 2 else kw.get("keepdim", False)))
    if over_stack(c, OpKind.MEAN, x, dim, keep):
        return
    rank = len(c.tensors[c.ref(x)].shape)
    dims = range(rank) if dim is None else ([dim] if isinstance(dim, int) else dim)
    c.emit(OpKind.MEAN, [c.ref(x)], axes=tuple(sorted(int(d) % rank for d in dims)), keepdims=keep)


def _argmax(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.argmax / Tensor.argmax: a class map from scores (a CPU op: `--cpu ARGMAX`)."""
    dim = c.value(args[1] if len(args) > 1 else kw.get("dim"))
    if dim is None:
        raise Unsupported("argmax without a dim (over the flattened tensor)")
    keep = bool(c.value(args[2] if len(args) > 2 else kw.get("keepdim", False)))
    rank = len(c.tensors[c.ref(args[0])].shape)
    c.emit(OpKind.ARGMAX, [c.ref(args[0])], axis=int(dim) % rank, keepdims=keep)


def _permute(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    dims = c.value(args[1:] if len(args) > 2 else (args[1] if len(args) > 1 else kw["dims"]))
    rank = len(c.tensors[c.ref(args[0])].shape)
    c.emit(OpKind.TRANSPOSE, [c.ref(args[0])], perm=tuple(int(d) % rank for d in dims))


def _transpose(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    rank = len(c.tensors[c.ref(args[0])].shape)
    d0, d1 = int(c.value(args[1])) % rank, int(c.value(args[2])) % rank
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    c.emit(OpKind.TRANSPOSE, [c.ref(args[0])], perm=tuple(perm))


def _cat(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    tensors = args[0] if args else kw["tensors"]
    dim = int(c.value(args[1] if len(args) > 1 else kw.get("dim", 0)))
    rank = len(c.tensors[c.ref(tensors[0])].shape)
    c.emit(OpKind.CONCATENATION, [c.ref(t) for t in tensors], axis=dim % rank)


def _channel_shuffle(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    groups = m.groups if m is not None else c.value(args[1] if len(args) > 1 else kw["groups"])
    c.emit(OpKind.CHANNEL_SHUFFLE, [c.ref(args[0])], groups=int(groups), axis=1)


def _matmul(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    c.emit(OpKind.BATCH_MATMUL, [c.ref(args[0]), c.ref(args[1])], adj_x=False, adj_y=False)


def f_layer_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "normalized_shape", "weight", "bias", "eps"), args, strict=False)) | kw
    ins = [c.ref(a["input"])] + [c.ref(a[k]) for k in ("weight", "bias") if a.get(k) is not None]
    c.emit(
        OpKind.LAYER_NORM,
        ins,
        normalized_shape=tuple(c.value(a["normalized_shape"])),
        eps=float(c.value(a.get("eps", 1e-5))),
    )


def identity(kind: OpKind) -> Converter:
    return unary(kind)


MODULES: dict[type, Converter] = {
    nn.Conv2d: m_conv2d,
    nn.Conv3d: m_conv3d,
    nn.Conv1d: m_conv1d,
    nn.BatchNorm1d: m_batchnorm1d,
    nn.MaxPool1d: m_maxpool1d,
    nn.AvgPool1d: m_avgpool1d,
    nn.AdaptiveAvgPool1d: m_adaptive_avgpool1d,
    nn.BatchNorm2d: m_batchnorm,
    nn.BatchNorm3d: m_batchnorm,
    nn.ReLU: unary(OpKind.RELU),
    nn.ReLU6: unary(OpKind.RELU6),
    nn.Hardtanh: m_hardtanh,
    nn.PReLU: m_prelu,
    nn.Upsample: m_upsample,
    nn.UpsamplingNearest2d: m_upsample,
    nn.UpsamplingBilinear2d: m_upsample,
    nn.PixelShuffle: m_pixel_shuffle,
    nn.PixelUnshuffle: m_pixel_unshuffle,
    nn.ConvTranspose2d: m_conv_transpose2d,
    nn.LeakyReLU: m_leaky_relu,
    nn.SiLU: unary(OpKind.SILU),
    nn.Sigmoid: unary(OpKind.LOGISTIC),
    nn.Tanh: unary(OpKind.TANH),
    nn.Hardswish: unary(OpKind.HARD_SWISH),
    nn.Hardsigmoid: unary(OpKind.HARD_SIGMOID),
    nn.GELU: m_gelu,
    nn.Softmax: lambda c, m, a, k: _softmax(c, a[0], m.dim),
    nn.LayerNorm: m_layernorm,
    nn.ChannelShuffle: _channel_shuffle,
    nn.MaxPool2d: m_maxpool,
    nn.AvgPool2d: m_avgpool2d,
    nn.AdaptiveAvgPool2d: lambda c, m, a, k: adaptive(c, a[0], m.output_size),
    nn.MaxPool3d: m_maxpool3d,
    nn.AvgPool3d: m_avgpool3d,
    nn.ConvTranspose3d: refuse_conv_transpose3d,
    nn.AdaptiveAvgPool3d: m_adaptive_avgpool3d,
    nn.AdaptiveMaxPool2d: m_adaptive_maxpool,
    nn.Linear: m_linear,
    nn.Flatten: lambda c, m, a, k: _flatten(c, a[0], m.start_dim, m.end_dim),
    nn.Dropout: identity(OpKind.DROPOUT),
    nn.Dropout1d: identity(OpKind.DROPOUT),
    nn.Dropout2d: identity(OpKind.DROPOUT),
    nn.Dropout3d: identity(OpKind.DROPOUT),
    nn.AlphaDropout: identity(OpKind.DROPOUT),
    nn.Identity: identity(OpKind.IDENTITY),
    nn.ZeroPad2d: m_pad,
    nn.ConstantPad2d: m_pad,
    nn.GroupNorm: m_group_norm,
    nn.InstanceNorm1d: m_instance_norm,
    nn.InstanceNorm2d: m_instance_norm,
    nn.ReflectionPad1d: m_mode_pad("reflect"),
    nn.ReflectionPad2d: m_mode_pad("reflect"),
    nn.ReplicationPad1d: m_mode_pad("replicate"),
    nn.ReplicationPad2d: m_mode_pad("replicate"),
    nn.CircularPad1d: m_mode_pad("circular"),
    nn.CircularPad2d: m_mode_pad("circular"),
    nn.ELU: fn.ELU,
    nn.CELU: fn.CELU,
    nn.SELU: fn.SELU,
    nn.Softplus: fn.SOFTPLUS,
    nn.Mish: fn.MISH,
    nn.LogSigmoid: fn.LOG_SIGMOID,
    nn.Tanhshrink: fn.TANHSHRINK,
    nn.Softsign: fn.SOFTSIGN,
}

FUNCTIONS: dict[Any, Converter] = {
    operator.add: commuted(OpKind.ADD),
    operator.iadd: binary(OpKind.ADD),
    torch.add: binary(OpKind.ADD),
    operator.sub: binary(OpKind.SUB),
    torch.sub: binary(OpKind.SUB),
    operator.mul: commuted(OpKind.MUL),
    operator.imul: binary(OpKind.MUL),
    torch.mul: binary(OpKind.MUL),
    operator.truediv: truediv,
    torch.div: binary(OpKind.DIV),
    torch.cat: _cat,
    torch.stack: stack,
    F.scaled_dot_product_attention: scaled_dot_product_attention,
    torch.concat: _cat,
    torch.flatten: lambda c, m, a, k: _flatten_call(c, a, k),
    torch.reshape: _reshape,
    torch.relu: unary(OpKind.RELU),
    F.relu: unary(OpKind.RELU),
    F.relu6: unary(OpKind.RELU6),
    F.hardtanh: lambda c, m, a, k: m_hardtanh(c, None, a, k),
    F.prelu: f_prelu,
    F.interpolate: f_interpolate,
    F.pixel_shuffle: f_pixel_shuffle,
    F.conv_transpose2d: f_conv_transpose2d,
    torch.pixel_shuffle: f_pixel_shuffle,
    F.leaky_relu: f_leaky_relu,
    torch.sigmoid: unary(OpKind.LOGISTIC),
    F.sigmoid: unary(OpKind.LOGISTIC),
    torch.tanh: unary(OpKind.TANH),
    F.tanh: unary(OpKind.TANH),
    F.silu: unary(OpKind.SILU),
    F.hardswish: unary(OpKind.HARD_SWISH),
    F.hardsigmoid: unary(OpKind.HARD_SIGMOID),
    F.gelu: lambda c, m, a, k: m_gelu(c, None, a, k),
    F.softmax: lambda c, m, a, k: _softmax(c, a[0], c.value(a[1] if len(a) > 1 else k.get("dim"))),
    torch.softmax: lambda c, m, a, k: _softmax(
        c, a[0], c.value(a[1] if len(a) > 1 else k.get("dim"))
    ),
    F.adaptive_avg_pool2d: lambda c, m, a, k: adaptive(
        c, a[0], c.value(a[1] if len(a) > 1 else k["output_size"])
    ),
    F.avg_pool2d: f_avgpool2d,
    F.avg_pool3d: f_avgpool3d,
    F.conv_transpose3d: refuse_conv_transpose3d,
    F.adaptive_avg_pool3d: f_adaptive_avgpool3d,
    F.max_pool2d: f_maxpool,
    F.adaptive_max_pool2d: f_adaptive_maxpool,
    F.conv2d: f_conv2d,
    F.linear: f_linear,
    F.dropout: identity(OpKind.DROPOUT),
    F.dropout2d: identity(OpKind.DROPOUT),
    F.dropout3d: identity(OpKind.DROPOUT),
    F.pad: f_pad,
    torch.mean: _mean,
    torch.argmax: _argmax,
    torch.permute: _permute,
    torch.transpose: _transpose,
    torch.matmul: _matmul,
    operator.matmul: _matmul,
    F.batch_norm: f_batch_norm,
    torch.bmm: _matmul,
    F.layer_norm: f_layer_norm,
    torch.sqrt: unary(OpKind.SQRT),
    torch.rsqrt: unary(OpKind.RSQRT),
    torch.reciprocal: unary(OpKind.RECIPROCAL),
    torch.exp: unary(OpKind.EXP),
    torch.log: unary(OpKind.LOG),
    **{getattr(torch, name): unary(kind) for name, kind in fn.ELEMENTWISE.items()},
    F.channel_shuffle: _channel_shuffle,
    torch.channel_shuffle: _channel_shuffle,
    operator.getitem: pick_values,
    getattr: values_attr,
    torch.clamp: f_clamp,
    torch.broadcast_to: expand,
    torch.clip: f_clamp,
    torch.sum: reduction(OpKind.REDUCE_SUM),
    torch.amax: reduction(OpKind.REDUCE_MAX),
    torch.amin: reduction(OpKind.REDUCE_MIN),
    torch.max: extreme(OpKind.REDUCE_MAX),
    torch.min: extreme(OpKind.REDUCE_MIN),
    torch.maximum: pairwise(top=True),
    torch.minimum: pairwise(top=False),
    torch.chunk: split_pieces,
    torch.split: split_pieces,
    torch.unbind: split_pieces,
    torch.narrow: narrow,
    F.max_pool1d: f_maxpool1d,
    F.avg_pool1d: f_avgpool1d,
    F.adaptive_avg_pool1d: f_adaptive_avgpool1d,
    torch.flip: flip,
    F.group_norm: f_group_norm,
    F.instance_norm: f_instance_norm,
    torch.roll: roll,
    F.elu: fn.ELU,
    F.celu: fn.CELU,
    F.selu: fn.SELU,
    torch.selu: fn.SELU,
    F.softplus: fn.SOFTPLUS,
    F.mish: fn.MISH,
    F.logsigmoid: fn.LOG_SIGMOID,
    F.tanhshrink: fn.TANHSHRINK,
    F.softsign: fn.SOFTSIGN,
    operator.neg: neg,
    torch.neg: neg,
    torch.abs: absolute,
    operator.pow: power,
    torch.pow: power,
    torch.square: square,
    torch.zeros_like: filled(0.0),
    torch.ones_like: filled(1.0),
    torch.full_like: filled(None),
    F.normalize: f_normalize,
    F.pixel_unshuffle: m_pixel_unshuffle,
    torch.pixel_unshuffle: m_pixel_unshuffle,
    **{getattr(operator, n): compare(n) for n in ("gt", "ge", "lt", "le", "eq", "ne")},
    **{getattr(torch, n): compare(n) for n in ("gt", "ge", "lt", "le", "eq", "ne")},
    torch.where: where,
    torch.masked_fill: masked_fill,
    torch.index_put: index_put,
}

METHODS: dict[str, Converter] = {
    "view": _reshape,
    "reshape": _reshape,
    "squeeze": _reshape,
    "unsqueeze": _reshape,
    "flatten": lambda c, m, a, k: _flatten_call(c, a, k),
    "permute": _permute,
    "transpose": _transpose,
    "contiguous": identity(OpKind.IDENTITY),
    "clone": identity(OpKind.IDENTITY),
    "mean": _mean,
    "argmax": _argmax,
    "add": binary(OpKind.ADD),
    "sub": binary(OpKind.SUB),
    "mul": binary(OpKind.MUL),
    "div": binary(OpKind.DIV),
    "relu": unary(OpKind.RELU),
    "sigmoid": unary(OpKind.LOGISTIC),
    "tanh": unary(OpKind.TANH),
    "softmax": lambda c, m, a, k: _softmax(c, a[0], c.value(a[1] if len(a) > 1 else k.get("dim"))),
    "chunk": split_pieces,
    "split": split_pieces,
    "unbind": split_pieces,
    "narrow": narrow,
    "matmul": _matmul,
    "flip": flip,
    "roll": roll,
    "exp": unary(OpKind.EXP),
    "log": unary(OpKind.LOG),
    "sqrt": unary(OpKind.SQRT),
    "rsqrt": unary(OpKind.RSQRT),
    "reciprocal": unary(OpKind.RECIPROCAL),
    **{name: unary(kind) for name, kind in fn.ELEMENTWISE.items()},
    "clamp": f_clamp,
    "expand": expand,
    "expand_as": expand,
    "repeat": repeat,
    "clip": f_clamp,
    "clamp_": f_clamp,
    "sum": reduction(OpKind.REDUCE_SUM),
    "amax": reduction(OpKind.REDUCE_MAX),
    "amin": reduction(OpKind.REDUCE_MIN),
    "max": extreme(OpKind.REDUCE_MAX),
    "min": extreme(OpKind.REDUCE_MIN),
    "maximum": pairwise(top=True),
    "minimum": pairwise(top=False),
    "neg": neg,
    "abs": absolute,
    "pow": power,
    "square": square,
    **{n: compare(n) for n in ("gt", "ge", "lt", "le", "eq", "ne")},
    "where": where_method,
    "masked_fill": masked_fill,
    "index_put": index_put,
    "index_put_": index_put,
    "float": to_float,
}
