"""Converters for core ATen ops (a `torch.export` program after `run_decompositions`).

Each entry maps one ATen overload onto the IR. Where the overload takes exactly the arguments of
a torch function the fx importer already converts (`aten.conv2d` is what `F.conv2d` calls, with
the same arguments in the same order), the fx converter is reused, so both paths emit the same
op with the same attributes. The rest are written here: ops with several outputs
(`_native_batch_norm_legit_no_training`, `split_with_sizes`: their pieces are picked by
`operator.getitem`, see `exported.py`), `slice`/`select`, and the argument spellings ATen uses
(`max_pool2d`'s `stride=[]`, `convolution`'s flags, the `upsample_*` vectors).

In-place variants (`relu_`, `hardswish_`, ...) do not need entries: `aten_direct` maps one as
its out-of-place overload where nothing sees the change, else the program is decomposed, which
functionalizes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from torch import fx

from mdla_ir.graph import Op, Source, Tensor
from mdla_ir.importer import functions as fn
from mdla_ir.importer.adaptive_max import aten_adaptive_maxpool
from mdla_ir.importer.attention import scaled_dot_product_attention
from mdla_ir.importer.broadcast import expand, repeat
from mdla_ir.importer.clamp import clamp_one, f_clamp, m_hardtanh
from mdla_ir.importer.context import (
    Converter,
    Ctx,
    Unsupported,
    pair,
    source_line,
    target_name,
    triple,
)
from mdla_ir.importer.conv1d import f_adaptive_avgpool1d, f_avgpool1d, f_maxpool1d, m_conv1d
from mdla_ir.importer.elementwise import absolute, filled, neg, power, square
from mdla_ir.importer.index_put import index_put
from mdla_ir.importer.layers import _max_pool2d, _pad4, adaptive, f_conv2d, f_linear, is_const
from mdla_ir.importer.norms import aten_instance_norm, aten_native_group_norm, f_group_norm
from mdla_ir.importer.pairwise import aten_clamp_one, aten_clamp_tensor, pairwise
from mdla_ir.importer.pool3d import f_adaptive_avgpool3d, f_avgpool3d
from mdla_ir.importer.pools import f_avgpool2d
from mdla_ir.importer.prelu import f_leaky_relu, f_prelu
from mdla_ir.importer.reduce import aten_extreme, reduction
from mdla_ir.importer.resample import _resize
from mdla_ir.importer.scatter import aten_copy, aten_where, select_scatter, slice_scatter
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.importer.shuffle import f_pixel_shuffle
from mdla_ir.importer.stacked import stack
from mdla_ir.importer.strided import aten_mode_pad, aten_slice, flip, roll
from mdla_ir.importer.tables import (
    _argmax,
    _cat,
    _channel_shuffle,
    _matmul,
    _mean,
    _permute,
    _reshape,
    _softmax,
    binary,
    f_layer_norm,
    m_gelu,
    unary,
)
from mdla_ir.importer.transpose3d import WHY
from mdla_ir.importer.transpose_conv import f_conv_transpose2d
from mdla_ir.importer.unshuffle import m_pixel_unshuffle
from mdla_ir.importer.where import compare, masked_fill, on_predicate, where
from mdla_ir.ops import OpKind

aten = torch.ops.aten

# Composite ops kept whole by the decomposition (the IR has one op, or one fold, for each).
KEEP: tuple[Any, ...] = (
    aten.conv1d.default,
    aten.conv1d.padding,
    aten.conv2d.default,
    aten.conv2d.padding,
    aten.conv3d.default,
    aten.conv_transpose2d.input,
    aten.linear.default,
    aten.hardswish.default,
    aten.hardsigmoid.default,
    aten.silu.default,
    aten.mish.default,
    aten.softplus.default,
    aten.celu.default,
    aten.selu.default,
    aten.log_sigmoid.default,
    aten.pixel_shuffle.default,
    aten.channel_shuffle.default,
    aten.native_channel_shuffle.default,
    aten.upsample_nearest2d.vec,
    aten.upsample_nearest2d.default,
    aten._upsample_nearest_exact2d.vec,
    aten.upsample_bilinear2d.vec,
    aten.adaptive_avg_pool1d.default,
    aten.adaptive_avg_pool2d.default,
    aten.adaptive_max_pool2d.default,
    aten.avg_pool1d.default,
    aten.max_pool1d.default,
    aten.max_pool2d.default,
    aten.max_pool3d.default,
    aten.avg_pool3d.default,
    aten.adaptive_avg_pool3d.default,
    aten.layer_norm.default,
    aten.prelu.default,
    aten.matmul.default,
    aten.scaled_dot_product_attention.default,
    aten.softmax.int,
    aten.roll.default,
    aten.reflection_pad1d.default,
    aten.reflection_pad2d.default,
    aten.replication_pad1d.default,
    aten.replication_pad2d.default,
    aten._pad_circular.default,
    aten.group_norm.default,
    aten.instance_norm.default,
)


def _shape(c: Ctx, x: Any) -> tuple[int, ...]:
    return c.tensors[c.ref(x)].shape


def _conv3d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    a = dict(zip(names, args, strict=False)) | kw
    if not is_const(c, a["weight"]) or (a.get("bias") is not None and not is_const(c, a["bias"])):
        raise Unsupported("conv3d weights computed at run time (only constants import)")
    w = c.ref(a["weight"])
    cout = c.tensors[w].shape[0]
    b = c.ref(a["bias"]) if a.get("bias") is not None else None
    b = b or c.const(f"{w}.zero_bias", np.zeros(cout, np.float32))
    padding = c.value(a.get("padding", 0))
    if isinstance(padding, str):
        raise Unsupported(f"conv3d padding={padding!r} (give the pads as numbers)")
    c.emit(
        OpKind.CONV_3D,
        [c.ref(a["input"]), w, b],
        stride=triple(c.value(a.get("stride", 1))),
        padding=triple(padding),
        dilation=triple(c.value(a.get("dilation", 1))),
        groups=int(c.value(a.get("groups", 1))),
    )


def _conv1d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """aten.conv1d as the fx importer's Conv1d (a 2-D conv on the 1-row image)."""
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    a = dict(zip(names, args, strict=False)) | kw
    for key in ("weight", "bias"):
        if a.get(key) is not None and not is_const(c, a[key]):
            raise Unsupported(f"conv1d {key} is computed at run time (only constants import)")
    w = c.tensors[c.ref(a["weight"])].data
    b = c.tensors[c.ref(a["bias"])].data if a.get("bias") is not None else None
    assert w is not None
    layer = SimpleNamespace(
        padding_mode="zeros",
        weight=torch.from_numpy(w),
        bias=None if b is None else torch.from_numpy(b),
        out_channels=w.shape[0],
        kernel_size=(w.shape[2],),
        stride=c.value(a.get("stride", 1)),
        padding=c.value(a.get("padding", 0)),
        dilation=c.value(a.get("dilation", 1)),
        groups=int(c.value(a.get("groups", 1))),
    )
    m_conv1d(c, layer, (a["input"],), {})


def _convolution(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """aten.convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)."""
    x, w, b, stride, padding, dilation, transposed, out_pad, groups = args[:9]
    rank = len(_shape(c, w))
    if c.value(transposed):
        if rank != 4:
            raise Unsupported(WHY if rank == 5 else f"a transposed convolution, rank-{rank} weight")
        f_conv_transpose2d(c, None, (x, w, b, stride, padding, out_pad, groups, dilation), {})
        return
    make = {3: _conv1d, 4: f_conv2d, 5: _conv3d}.get(rank)
    if make is None:
        raise Unsupported(f"a convolution with a rank-{rank} weight")
    make(c, None, (x, w, b, stride, padding, dilation, groups), {})


def _batch_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """_native_batch_norm_legit_no_training(x, w, b, mean, var, momentum, eps) -> (y, _, _):
    BATCH_NORM on the piece `getitem(·, 0)` picks (a 3-D input on its 1-row image)."""
    x, w, b, mean, var = args[:5]
    eps = float(c.value(args[6] if len(args) > 6 else kw.get("eps", 1e-5)))
    if not all(t is None or is_const(c, t) for t in (w, b, mean, var)):
        raise Unsupported("batch_norm statistics computed at run time (only constants import)")
    if mean is None or var is None:
        raise Unsupported("batch_norm without running statistics (track_running_stats=False)")
    n = c.tensors[c.ref(mean)].shape[0]
    node = c.node
    assert node is not None
    gamma = c.ref(w) if w is not None else c.const(f"{node.name}.weight", np.ones(n, np.float32))
    beta = c.ref(b) if b is not None else c.const(f"{node.name}.bias", np.zeros(n, np.float32))
    shape = _shape(c, x)
    ins = [c.ref(x), c.ref(mean), c.ref(var), gamma, beta]
    if len(shape) == 3:
        image = (shape[0], shape[1], 1, shape[2])
        ins[0] = emit_shaped(c, OpKind.RESHAPE, [ins[0]], image, "as_image", shape=image)
        y = emit_shaped(c, OpKind.BATCH_NORM, ins, image, "image", eps=eps)
        y = emit_shaped(c, OpKind.RESHAPE, [y], shape, "bn", shape=shape)
    else:
        assert isinstance(c, AtenCtx)
        y = c.emit_as(OpKind.BATCH_NORM, ins, shape, eps=eps)
    pieces(c)[node] = [y]


@dataclass
class AtenCtx(Ctx):
    """The conversion context of an exported program: ops are named by the module they ran
    in (a torch.nn layer's only op by the layer itself, as the fx importer names them)."""

    # per multi-output node, its outputs: a tensor name, or a pending slice (x, begin, size)
    pieces: dict[fx.Node, list[Any]] = field(default_factory=dict)
    # qualified names of modules that compute as a torch.nn layer (a subclass that overrides
    # nothing: `subclasses.known_base`), named by themselves as torch.nn's own layers are
    layers: frozenset[str] = frozenset()

    def op_name(self, node: fx.Node) -> str:
        scope, cls = module_of(node)
        if scope and (cls.startswith("torch.nn.modules.") or scope in self.layers):
            return scope
        called = node.meta.get("torch_fn")  # (name, kind) of the torch call the op came from
        base = re.sub(r"_\d+$", "", str(called[0]).split(".")[0] if called else node.name)
        base = base.rstrip("_")
        return f"{scope}.{base}" if scope else base

    def emit_as(self, kind: OpKind, inputs: list[str], shape: tuple[int, ...], **attrs: Any) -> str:
        """One op for the current node with an output of `shape` (the node gives none: it has
        several outputs), named as `emit` names them; the output's name."""
        node = self.node
        assert node is not None
        out = self.fresh(node.name, self.tensors)
        self.tensors[out] = Tensor(out, shape)
        name = self.fresh(self.op_name(node), {o.name: None for o in self.ops})
        source = Source(node.name, target_name(node), source_line(node))
        self.ops.append(Op(kind, name, tuple(inputs), (out,), attrs, source))
        return out


def module_of(node: fx.Node) -> tuple[str, str]:
    """(qualified name, class) of the innermost module a node ran in ("" at the top level)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "", ""
    path, cls = next(reversed(stack.values()))
    cls = cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}"
    return str(path), cls


def pieces(c: Ctx) -> dict[fx.Node, list[Any]]:
    assert isinstance(c, AtenCtx)
    return c.pieces


def _split(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """split.Tensor / split_with_sizes / chunk: one SLICE per piece, emitted when picked."""
    node = c.node
    assert node is not None
    x = args[0]
    shape = _shape(c, x)
    dim = int(c.value(args[2] if len(args) > 2 else kw.get("dim", 0))) % len(shape)
    sizes = [int(v.shape[dim]) for v in node.meta["val"]]
    out: list[Any] = []
    at = 0
    for n in sizes:
        begin, size = [0] * len(shape), list(shape)
        begin[dim], size[dim] = at, n
        out.append((x, tuple(begin), tuple(size)))
        at += n
    pieces(c)[node] = out


def pick(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """operator.getitem(multi-output node, i): alias its tensor, or emit its pending SLICE."""
    src, i = args
    found = pieces(c).get(src)
    if found is None:
        raise Unsupported(f"an item of `{getattr(src, 'name', src)}` (not a known multi-output)")
    if int(i) >= len(found):  # max/min over a dim, adaptive_max_pool2d: indices not held
        raise Unsupported(
            f"output {int(i)} of `{src.name}` (its indices)", "use torch.argmax for indices"
        )
    item = found[int(i)]
    if isinstance(item, str):
        assert c.node is not None
        c.refs[c.node] = item
        return
    x, begin, size = item
    c.emit(OpKind.SLICE, [c.ref(x)], begin=begin, size=size)


def _slice(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """slice.Tensor(x, dim, start, end, step): a SLICE (unit steps)."""
    a = dict(zip(("input", "dim", "start", "end", "step"), args, strict=False)) | kw
    shape = _shape(c, a["input"])
    dim = int(c.value(a.get("dim", 0))) % len(shape)
    if int(c.value(a.get("step", 1))) != 1:
        start, end = c.value(a.get("start")), c.value(a.get("end"))
        aten_slice(c, a["input"], dim, start, end, int(c.value(a["step"])))
        return
    lo, hi, _ = slice(c.value(a.get("start")), c.value(a.get("end"))).indices(shape[dim])
    if hi <= lo:
        raise Unsupported("an empty slice")
    begin, size = [0] * len(shape), list(shape)
    begin[dim], size[dim] = lo, hi - lo
    c.emit(OpKind.SLICE, [c.ref(a["input"])], begin=tuple(begin), size=tuple(size))


def _select(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """select.int(x, dim, index): a SLICE of length 1, then the RESHAPE dropping the axis."""
    x, dim, index = args[:3]
    shape = _shape(c, x)
    dim = int(c.value(dim)) % len(shape)
    begin, size = [0] * len(shape), list(shape)
    begin[dim], size[dim] = int(c.value(index)) % shape[dim], 1
    kept = emit_shaped(
        c, OpKind.SLICE, [c.ref(x)], size, "slice", begin=tuple(begin), size=tuple(size)
    )
    assert c.node is not None
    c.emit(OpKind.RESHAPE, [kept], shape=tuple(int(d) for d in c.node.meta["val"].shape))


def _pool_args(c: Ctx, args: tuple[Any, ...], kw: dict[str, Any]) -> dict[str, Any]:
    names = ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode")
    given = dict(zip(names, args, strict=False)) | kw
    return {k: v if k == "input" else c.value(v) for k, v in given.items()}


def _max_pool(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """max_pool2d(x, kernel, stride=[] (= kernel), padding, dilation, ceil_mode)."""
    a = _pool_args(c, args, kw)
    _max_pool2d(
        c,
        a["input"],
        a["kernel_size"],
        a.get("stride") or None,
        a.get("padding", 0),
        a.get("dilation", 1),
        bool(a.get("ceil_mode", False)),
    )


def _max_pool3d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = _pool_args(c, args, kw)
    if a.get("ceil_mode") or triple(a.get("dilation", 1)) != (1, 1, 1):
        raise Unsupported("max_pool3d with ceil_mode or dilation")
    k = triple(a["kernel_size"])
    s = triple(a["stride"]) if a.get("stride") else k
    c.emit(
        OpKind.MAX_POOL_3D,
        [c.ref(a["input"])],
        kernel=k,
        stride=s,
        padding=triple(a.get("padding", 0)),
    )


def _upsample(mode: str, align_at: int | None, scale_at: int) -> Converter:
    """upsample_*2d.vec(x, output_size, [align_corners,] scale_factors): the interpolate call."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        align = c.value(args[align_at]) if align_at is not None and len(args) > align_at else None
        scale = c.value(args[scale_at]) if len(args) > scale_at else None
        _resize(c, args[0], scale or None, mode, align, None)

    return convert


def _upsample_nearest_sizes(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """upsample_nearest2d.default(x, output_size, scales_h, scales_w)."""
    scales = [c.value(s) for s in args[2:4]]
    _resize(c, args[0], tuple(scales) if all(scales) and scales else None, "nearest", None, None)


def _pad(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    value = c.value(args[2] if len(args) > 2 else kw.get("value", 0.0))
    _pad4(c, args[0], [int(p) for p in c.value(args[1])], float(value))


def _rsub(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """rsub(x, other) = other - x."""
    if c.value(kw.get("alpha", args[2] if len(args) > 2 else 1)) != 1:
        raise Unsupported("rsub with alpha != 1")
    c.emit(OpKind.SUB, [c.ref(args[1]), c.ref(args[0])], fuse="NONE")


def _reciprocal(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """reciprocal(x) = 1 / x (export's form of `scalar / x`)."""
    c.emit(OpKind.RECIPROCAL, [c.ref(args[0])])


def _same_dtype(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """_to_copy / clone / alias to float32 on the CPU: the identity on values."""
    assert c.node is not None
    if c.node.meta["val"].dtype != torch.float32:
        raise Unsupported(f"a cast to {c.node.meta['val'].dtype} (only float32 is imported)")
    c.emit(OpKind.IDENTITY, [c.ref(args[0])])


ATEN: dict[Any, Converter] = {
    aten.conv2d.default: f_conv2d,
    aten.conv2d.padding: f_conv2d,
    aten.conv1d.default: _conv1d,
    aten.conv1d.padding: _conv1d,
    aten.conv3d.default: _conv3d,
    aten.convolution.default: _convolution,
    aten.conv_transpose2d.input: f_conv_transpose2d,
    aten.linear.default: f_linear,
    aten._native_batch_norm_legit_no_training.default: _batch_norm,
    aten.relu.default: unary(OpKind.RELU),
    aten.sigmoid.default: unary(OpKind.LOGISTIC),
    aten.tanh.default: unary(OpKind.TANH),
    aten.silu.default: unary(OpKind.SILU),
    aten.hardswish.default: unary(OpKind.HARD_SWISH),
    aten.hardsigmoid.default: unary(OpKind.HARD_SIGMOID),
    aten.sqrt.default: unary(OpKind.SQRT),
    aten.rsqrt.default: unary(OpKind.RSQRT),
    aten.exp.default: unary(OpKind.EXP),
    aten.log.default: unary(OpKind.LOG),
    **{getattr(aten, name).default: unary(kind) for name, kind in fn.ELEMENTWISE.items()},
    aten.elu.default: fn.ATEN_ELU,
    aten.celu.default: fn.CELU,
    aten.selu.default: fn.SELU,
    aten.softplus.default: fn.SOFTPLUS,
    aten.mish.default: fn.MISH,
    aten.log_sigmoid.default: fn.LOG_SIGMOID,
    aten.hardtanh.default: lambda c, m, a, k: m_hardtanh(c, None, a, k),
    aten.gelu.default: lambda c, m, a, k: m_gelu(c, None, a, k),
    aten.leaky_relu.default: f_leaky_relu,
    aten.prelu.default: f_prelu,
    aten.add.Tensor: binary(OpKind.ADD),
    aten.add.Scalar: binary(OpKind.ADD),
    aten.sub.Tensor: binary(OpKind.SUB),
    aten.sub.Scalar: binary(OpKind.SUB),
    aten.rsub.Scalar: _rsub,
    aten.rsub.Tensor: _rsub,
    aten.mul.Tensor: binary(OpKind.MUL),
    aten.mul.Scalar: binary(OpKind.MUL),
    aten.div.Tensor: binary(OpKind.DIV),
    aten.div.Scalar: binary(OpKind.DIV),
    aten.reciprocal.default: _reciprocal,
    aten.cat.default: _cat,
    aten.stack.default: stack,
    aten.copy.default: aten_copy,
    aten.slice_scatter.default: slice_scatter,
    aten.select_scatter.default: select_scatter,
    aten.index_put.default: index_put,
    aten.where.self: on_predicate(where, aten_where),
    aten.scaled_dot_product_attention.default: scaled_dot_product_attention,
    aten.view.default: _reshape,
    aten._unsafe_view.default: _reshape,
    aten.reshape.default: _reshape,
    aten.squeeze.dims: _reshape,
    aten.squeeze.dim: _reshape,
    aten.squeeze.default: _reshape,
    aten.unsqueeze.default: _reshape,
    aten.permute.default: _permute,
    aten.mean.dim: _mean,
    aten.mean.default: _mean,
    aten.argmax.default: _argmax,
    aten._softmax.default: lambda c, m, a, k: _softmax(c, a[0], c.value(a[1])),
    aten.softmax.int: lambda c, m, a, k: _softmax(c, a[0], c.value(a[1])),
    aten.layer_norm.default: f_layer_norm,
    aten.matmul.default: _matmul,
    aten.bmm.default: _matmul,
    aten.mm.default: _matmul,
    aten.split.Tensor: _split,
    aten.split_with_sizes.default: _split,
    aten.slice.Tensor: _slice,
    aten.select.int: _select,
    aten.max_pool2d.default: _max_pool,
    aten.max_pool3d.default: _max_pool3d,
    aten.avg_pool3d.default: f_avgpool3d,
    aten.adaptive_avg_pool3d.default: f_adaptive_avgpool3d,
    aten._adaptive_avg_pool3d.default: f_adaptive_avgpool3d,
    aten.max_pool1d.default: f_maxpool1d,
    aten.avg_pool2d.default: f_avgpool2d,
    aten.avg_pool1d.default: f_avgpool1d,
    aten.adaptive_avg_pool2d.default: lambda c, m, a, k: adaptive(c, a[0], pair(c.value(a[1]))),
    aten.adaptive_avg_pool1d.default: f_adaptive_avgpool1d,
    aten.constant_pad_nd.default: _pad,
    aten.upsample_nearest2d.vec: _upsample("nearest", None, 2),
    aten._upsample_nearest_exact2d.vec: _upsample("nearest-exact", None, 2),
    aten.upsample_bilinear2d.vec: _upsample("bilinear", 2, 3),
    aten.upsample_nearest2d.default: _upsample_nearest_sizes,
    aten.pixel_shuffle.default: f_pixel_shuffle,
    aten.channel_shuffle.default: _channel_shuffle,
    aten.native_channel_shuffle.default: _channel_shuffle,
    aten.clone.default: _same_dtype,
    aten.alias.default: _same_dtype,
    aten._to_copy.default: _same_dtype,
    aten.flip.default: flip,
    aten.roll.default: roll,
    aten.reflection_pad1d.default: aten_mode_pad("reflect"),
    aten.reflection_pad2d.default: aten_mode_pad("reflect"),
    aten.replication_pad1d.default: aten_mode_pad("replicate"),
    aten.replication_pad2d.default: aten_mode_pad("replicate"),
    aten._pad_circular.default: aten_mode_pad("circular"),
    aten.group_norm.default: f_group_norm,
    aten.native_group_norm.default: aten_native_group_norm,
    aten.instance_norm.default: aten_instance_norm,
    aten.clamp.default: f_clamp,
    aten.expand.default: expand,
    aten.adaptive_max_pool2d.default: aten_adaptive_maxpool,
    aten.repeat.default: repeat,
    aten.clamp_min.default: clamp_one("min"),
    aten.clamp_max.default: clamp_one("max"),
    aten.sum.dim_IntList: reduction(OpKind.REDUCE_SUM),
    aten.sum.default: reduction(OpKind.REDUCE_SUM),
    aten.amax.default: reduction(OpKind.REDUCE_MAX),
    aten.amin.default: reduction(OpKind.REDUCE_MIN),
    aten.max.default: reduction(OpKind.REDUCE_MAX),
    aten.min.default: reduction(OpKind.REDUCE_MIN),
    aten.max.dim: aten_extreme(OpKind.REDUCE_MAX),
    aten.min.dim: aten_extreme(OpKind.REDUCE_MIN),
    aten.maximum.default: pairwise(top=True),
    aten.minimum.default: pairwise(top=False),
    aten.max.other: pairwise(top=True),
    aten.min.other: pairwise(top=False),
    aten.clamp.Tensor: aten_clamp_tensor,
    aten.clamp_min.Tensor: aten_clamp_one("min"),
    aten.clamp_max.Tensor: aten_clamp_one("max"),
    aten.neg.default: neg,
    aten.abs.default: absolute,
    aten.pow.Tensor_Scalar: power,
    aten.square.default: square,
    aten.full_like.default: filled(None),
    aten.zeros_like.default: filled(0.0),
    aten.ones_like.default: filled(1.0),
    aten.pixel_unshuffle.default: m_pixel_unshuffle,
    **{
        getattr(getattr(aten, n), form): compare(n)
        for n in ("gt", "ge", "lt", "le", "eq", "ne")
        for form in ("Scalar", "Tensor")
    },
    **{getattr(aten.where, f): where for f in ("ScalarOther", "ScalarSelf", "Scalar")},
    aten.masked_fill.Scalar: masked_fill,
    aten.masked_fill.Tensor: masked_fill,
}
