"""torch.fx import: trace a module, propagate shapes (fx ShapeProp), emit the flat IR.

Every fx node becomes one op, a constant, or a compile-time Python value (sizes, shapes). The
tables below say which torch module / function / method becomes which op kind; constructs not in
them are collected and reported together in one `UnsupportedError` naming each fx node, what it
called and the model's source line.
"""

from __future__ import annotations

import operator
import os
import re
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp

from mdla_ir.errors import IRError, UnsupportedError
from mdla_ir.graph import Graph, Op, Source, Tensor
from mdla_ir.ops import OpKind
from mdla_ir.passes import run_passes
from mdla_ir.verify import verify


class _Tracer(fx.Tracer):
    """torch.nn modules are leaves (fx's default); so are modules that are identities in eval."""

    def __init__(self) -> None:
        super().__init__()
        self.record_stack_traces = True

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        if type(m).__name__ == "StochasticDepth":
            return True
        return super().is_leaf_module(m, module_qualified_name)


class _ValueProp(ShapeProp):
    """ShapeProp that also keeps the Python values (sizes, shapes) non-tensor nodes produce."""

    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: dict[fx.Node, Any] = {}

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        if not isinstance(result, torch.Tensor):
            self.values[n] = result
        return result


def _line(node: fx.Node) -> str:
    frames = [
        (path, line)
        for path, line in re.findall(r'File "([^"]+)", line (\d+)', node.stack_trace or "")
        if f"{os.sep}torch{os.sep}" not in path
    ]
    if not frames:
        return ""
    path, line = frames[-1]
    return f"{os.path.basename(path)}:{line}"


def _pair(v: Any) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _triple(v: Any) -> tuple[int, int, int]:
    return (int(v),) * 3 if isinstance(v, int) else (int(v[0]), int(v[1]), int(v[2]))


def _same_pads(k: Sequence[int], d: Sequence[int]) -> list[tuple[int, int]]:
    """PyTorch padding='same': total = d*(k-1), left = total // 2, the extra one after."""
    return [
        (di * (ki - 1) // 2, di * (ki - 1) - di * (ki - 1) // 2)
        for ki, di in zip(k, d, strict=True)
    ]


@dataclass
class _Ctx:
    gm: fx.GraphModule
    values: dict[fx.Node, Any]
    tensors: dict[str, Tensor] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    refs: dict[fx.Node, str] = field(default_factory=dict)  # node -> tensor name
    names: dict[str, int] = field(default_factory=dict)
    unsupported: list[str] = field(default_factory=list)
    node: fx.Node | None = None

    # -- values ------------------------------------------------------------------------------
    def is_tensor(self, a: Any) -> bool:
        return isinstance(a, fx.Node) and a in self.refs

    def ref(self, a: Any) -> str:
        """Tensor name for an argument: a traced tensor, or a scalar turned into a constant."""
        if self.is_tensor(a):
            return self.refs[a]
        value = self.value(a)
        if isinstance(value, torch.Tensor):
            value = value.detach().numpy()
        if isinstance(value, bool | int | float | np.ndarray):
            assert self.node is not None
            return self.const(f"{self.node.name}.const", np.asarray(value, dtype=np.float32))
        raise _Unsupported(f"argument {a!r} is neither a tensor nor a number")

    def value(self, a: Any) -> Any:
        """The compile-time value of a non-tensor argument (sizes, ints, tuples of them)."""
        if isinstance(a, fx.Node):
            if a not in self.values:
                raise _Unsupported(f"`{a.name}` has no compile-time value")
            return self.values[a]
        if isinstance(a, list | tuple):
            return type(a)(self.value(x) for x in a)
        return a

    def const(self, name: str, data: np.ndarray[Any, Any]) -> str:
        name = self.fresh(name, self.tensors)
        self.tensors[name] = Tensor(name, tuple(data.shape), str(data.dtype), data=data)
        return name

    def param(self, module: nn.Module, attr: str, qualname: str) -> str | None:
        p = getattr(module, attr, None)
        if p is None:
            return None
        return self.const(f"{qualname}.{attr}", p.detach().cpu().numpy().astype(np.float32))

    @staticmethod
    def fresh(name: str, taken: dict[str, Any]) -> str:
        base, i = name, 1
        while name in taken:
            name, i = f"{base}.{i}", i + 1
        return name

    # -- ops ---------------------------------------------------------------------------------
    def emit(self, kind: OpKind, inputs: Sequence[str | None], **attrs: Any) -> None:
        node = self.node
        assert node is not None
        meta = node.meta.get("tensor_meta")
        if meta is None or not hasattr(meta, "shape"):
            raise _Unsupported("produces something other than one tensor")
        if meta.dtype != torch.float32:
            raise _Unsupported(f"produces a {meta.dtype} tensor (only float32 is imported)")
        out = self.fresh(node.name, self.tensors)
        self.tensors[out] = Tensor(out, tuple(int(d) for d in meta.shape))
        op_names = {o.name for o in self.ops}
        self.ops.append(
            Op(
                kind,
                self.fresh(self.op_name(node), dict.fromkeys(op_names)),
                tuple(i for i in inputs if i is not None),
                (out,),
                attrs,
                Source(node.name, _target_name(node), _line(node)),
            )
        )
        self.refs[node] = out

    def op_name(self, node: fx.Node) -> str:
        if node.op == "call_module":
            return str(node.target)
        stack = node.meta.get("nn_module_stack") or {}
        scope = next(reversed(stack.values()))[0] if stack else ""
        base = re.sub(r"_\d+$", "", node.name)
        return f"{scope}.{base}" if scope else base


class _Unsupported(Exception):  # noqa: N818  (internal signal, not a user-facing error)
    """Raised by a converter: this node cannot be represented (collected, reported at the end)."""


def _target_name(node: fx.Node) -> str:
    t = node.target
    if node.op == "call_module":
        return str(t)
    if node.op == "call_method":
        return f"Tensor.{t}"
    module = getattr(t, "__module__", None) or ""
    name = getattr(t, "__name__", None) or str(t)
    module = {"_operator": "operator"}.get(module, module)
    return f"{module}.{name}" if module else name


# ---------------------------------------------------------------------------------------------
# Converters. Each takes the context, the node's positional args and keyword args.

Converter = Callable[[_Ctx, Any, tuple[Any, ...], dict[str, Any]], None]


def _conv2d_op(
    c: _Ctx, x: Any, w: str, b: str | None, stride: Any, padding: Any, dilation: Any, groups: int
) -> None:
    wshape = c.tensors[w].shape
    if b is None:
        b = c.const(f"{w}.zero_bias", np.zeros(wshape[0], dtype=np.float32))
    k, d = wshape[2:], _pair(dilation)
    if isinstance(padding, str):
        pads = _same_pads(k, d) if padding == "same" else [(0, 0), (0, 0)]
    else:
        ph, pw = _pair(padding)
        pads = [(ph, ph), (pw, pw)]
    c.emit(
        OpKind.CONV_2D,
        [c.ref(x), w, b],
        stride=_pair(stride),
        dilation=d,
        padding=(pads[0][0], pads[0][1], pads[1][0], pads[1][1]),
        groups=int(groups),
        fuse="NONE",
    )


def _m_conv2d(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.padding_mode != "zeros":
        raise _Unsupported(f"padding_mode={m.padding_mode!r} (only zeros is imported)")
    q = str(c.node.target) if c.node else ""
    w = c.param(m, "weight", q)
    assert w is not None
    _conv2d_op(c, args[0], w, c.param(m, "bias", q), m.stride, m.padding, m.dilation, m.groups)


def _f_conv2d(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    a = dict(zip(names, args, strict=False)) | kw
    for key in ("weight", "bias"):
        if a.get(key) is not None and not _is_const(c, a[key]):
            raise _Unsupported(f"conv2d {key} is computed at run time (only constants import)")
    b = c.ref(a["bias"]) if a.get("bias") is not None else None
    _conv2d_op(
        c,
        a["input"],
        c.ref(a["weight"]),
        b,
        c.value(a.get("stride", 1)),
        c.value(a.get("padding", 0)),
        c.value(a.get("dilation", 1)),
        c.value(a.get("groups", 1)),
    )


def _is_const(c: _Ctx, a: Any) -> bool:
    return c.is_tensor(a) and c.tensors[c.refs[a]].is_const


def _m_conv3d(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.padding_mode != "zeros":
        raise _Unsupported(f"padding_mode={m.padding_mode!r} (only zeros is imported)")
    q = str(c.node.target) if c.node else ""
    w = c.param(m, "weight", q)
    assert w is not None
    b = c.param(m, "bias", q) or c.const(f"{q}.zero_bias", np.zeros(m.out_channels, np.float32))
    if isinstance(m.padding, str):
        pads = _same_pads(m.kernel_size, m.dilation) if m.padding == "same" else [(0, 0)] * 3
        if any(lo != hi for lo, hi in pads):
            raise _Unsupported("Conv3d padding='same' with an even kernel (asymmetric padding)")
        pad = tuple(lo for lo, _ in pads)
    else:
        pad = _triple(m.padding)
    c.emit(
        OpKind.CONV_3D,
        [c.ref(args[0]), w, b],
        stride=_triple(m.stride),
        padding=pad,
        dilation=_triple(m.dilation),
        groups=int(m.groups),
    )


def _m_batchnorm(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.running_mean is None:
        raise _Unsupported("BatchNorm without running statistics (track_running_stats=False)")
    q = str(c.node.target) if c.node else ""
    n = m.num_features
    gamma = c.param(m, "weight", q) or c.const(f"{q}.weight", np.ones(n, np.float32))
    beta = c.param(m, "bias", q) or c.const(f"{q}.bias", np.zeros(n, np.float32))
    c.emit(
        OpKind.BATCH_NORM,
        [c.ref(args[0]), c.param(m, "running_mean", q), c.param(m, "running_var", q), gamma, beta],
        eps=float(m.eps),
    )


def _pool_pads(
    size: Sequence[int], k: Sequence[int], s: Sequence[int], p: Sequence[int], ceil: bool
) -> tuple[int, int, int, int]:
    """Explicit (top, bottom, left, right) pads; ceil_mode becomes extra bottom/right padding.

    PyTorch ceil mode: out = ceil((size + 2p - k) / s) + 1, minus one when the last window would
    start past size + p. The extra padding makes a floor-mode window list of the same length.
    """
    pads: list[int] = []
    for n, ki, si, pi in zip(size, k, s, p, strict=True):
        extra = 0
        if ceil:
            out = -(-(n + 2 * pi - ki) // si) + 1
            if (out - 1) * si >= n + pi:
                out -= 1
            extra = max(0, (out - 1) * si + ki - (n + 2 * pi))
        pads += [pi, pi + extra]
    return pads[0], pads[1], pads[2], pads[3]


def _pool2d(
    c: _Ctx,
    kind: OpKind,
    x: Any,
    kernel: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    count_include_pad: bool = True,
    divisor_override: Any = None,
) -> None:
    if _pair(dilation) != (1, 1):
        raise _Unsupported("pooling with dilation > 1")
    if divisor_override is not None:
        raise _Unsupported("avg_pool2d with divisor_override")
    k = _pair(kernel)
    s = _pair(stride) if stride not in (None, [], ()) else k
    size = c.tensors[c.ref(x)].shape[2:]
    pads = _pool_pads(size, k, s, _pair(padding), bool(ceil_mode))
    attrs: dict[str, Any] = {"kernel": k, "stride": s, "padding": pads, "fuse": "NONE"}
    if kind is OpKind.AVERAGE_POOL_2D:
        if (pads[1], pads[3]) != (pads[0], pads[2]):
            raise _Unsupported("avg_pool2d with ceil_mode adding a partial window")
        attrs["count_include_pad"] = bool(count_include_pad)
    c.emit(kind, [c.ref(x)], **attrs)


def _m_maxpool(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.return_indices:
        raise _Unsupported("MaxPool2d(return_indices=True)")
    _pool2d(
        c, OpKind.MAX_POOL_2D, args[0], m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode
    )


def _m_avgpool(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    _pool2d(
        c,
        OpKind.AVERAGE_POOL_2D,
        args[0],
        m.kernel_size,
        m.stride,
        m.padding,
        1,
        m.ceil_mode,
        m.count_include_pad,
        m.divisor_override,
    )


def _f_pool(kind: OpKind) -> Converter:
    def convert(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        if kind is OpKind.MAX_POOL_2D:
            names = (
                "input",
                "kernel_size",
                "stride",
                "padding",
                "dilation",
                "ceil_mode",
                "return_indices",
            )
        else:
            names = (
                "input",
                "kernel_size",
                "stride",
                "padding",
                "ceil_mode",
                "count_include_pad",
                "divisor_override",
            )
        a = {
            k: c.value(v) if k != "input" else v
            for k, v in (dict(zip(names, args, strict=False)) | kw).items()
        }
        if a.get("return_indices"):
            raise _Unsupported("max_pool2d(return_indices=True)")
        _pool2d(
            c,
            kind,
            a["input"],
            a["kernel_size"],
            a.get("stride"),
            a.get("padding", 0),
            a.get("dilation", 1),
            a.get("ceil_mode", False),
            a.get("count_include_pad", True),
            a.get("divisor_override"),
        )

    return convert


def _adaptive(c: _Ctx, x: Any, output_size: Any) -> None:
    shape = c.tensors[c.ref(x)].shape
    oh, ow = (
        _pair(output_size)
        if not isinstance(output_size, list | tuple)
        else (
            output_size[0] if output_size[0] is not None else shape[2],
            output_size[1] if output_size[1] is not None else shape[3],
        )
    )
    c.emit(OpKind.ADAPTIVE_AVG_POOL_2D, [c.ref(x)], output_size=(int(oh), int(ow)))


def _m_maxpool3d(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.return_indices or m.ceil_mode or _triple(m.dilation) != (1, 1, 1):
        raise _Unsupported("MaxPool3d with return_indices, ceil_mode or dilation")
    k = _triple(m.kernel_size)
    s = _triple(m.stride) if m.stride is not None else k
    c.emit(OpKind.MAX_POOL_3D, [c.ref(args[0])], kernel=k, stride=s, padding=_triple(m.padding))


def _m_linear(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    q = str(c.node.target) if c.node else ""
    b = c.param(m, "bias", q) or c.const(f"{q}.zero_bias", np.zeros(m.out_features, np.float32))
    c.emit(OpKind.FULLY_CONNECTED, [c.ref(args[0]), c.param(m, "weight", q), b], fuse="NONE")


def _f_linear(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "weight", "bias"), args, strict=False)) | kw
    if not _is_const(c, a["weight"]):
        raise _Unsupported("linear weight is computed at run time (only constants import)")
    w = c.ref(a["weight"])
    b = (
        c.ref(a["bias"])
        if a.get("bias") is not None
        else c.const(f"{w}.zero_bias", np.zeros(c.tensors[w].shape[0], np.float32))
    )
    c.emit(OpKind.FULLY_CONNECTED, [c.ref(a["input"]), w, b], fuse="NONE")


def _m_layernorm(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    q = str(c.node.target) if c.node else ""
    c.emit(
        OpKind.LAYER_NORM,
        [c.ref(args[0]), c.param(m, "weight", q), c.param(m, "bias", q)],
        normalized_shape=tuple(m.normalized_shape),
        eps=float(m.eps),
    )


def _pad4(c: _Ctx, x: Any, pad: Sequence[int], value: float) -> None:
    """F.pad order: (last_lo, last_hi, second_last_lo, ...) -> per-dim (before, after)."""
    rank = len(c.tensors[c.ref(x)].shape)
    pads = [(0, 0)] * rank
    for i in range(len(pad) // 2):
        pads[rank - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise _Unsupported("negative padding (cropping)")
    c.emit(OpKind.PAD, [c.ref(x)], pads=tuple(pads), value=float(value))


def _m_pad(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    _pad4(c, args[0], m.padding, getattr(m, "value", 0.0))


def _f_pad(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "pad", "mode", "value"), args, strict=False)) | kw
    if c.value(a.get("mode", "constant")) != "constant":
        raise _Unsupported(f"pad mode {a['mode']!r} (only constant is imported)")
    value = c.value(a.get("value"))
    _pad4(c, a["input"], c.value(a["pad"]), 0.0 if value is None else value)


def _unary(kind: OpKind, **attrs: Any) -> Converter:
    def convert(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        c.emit(kind, [c.ref(args[0] if args else kw["input"])], **attrs)

    return convert


def _m_hardtanh(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    lo, hi = (
        (m.min_val, m.max_val)
        if m is not None
        else (
            c.value(kw.get("min_val", args[1] if len(args) > 1 else -1.0)),
            c.value(kw.get("max_val", args[2] if len(args) > 2 else 1.0)),
        )
    )
    if (lo, hi) != (0.0, 6.0):
        raise _Unsupported(f"hardtanh({lo}, {hi}) (only hardtanh(0, 6) = ReLU6 is imported)")
    c.emit(OpKind.RELU6, [c.ref(args[0])])


def _m_gelu(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    approx = m.approximate if m is not None else c.value(kw.get("approximate", "none"))
    if approx != "none":
        raise _Unsupported("GELU(approximate='tanh')")
    c.emit(OpKind.GELU, [c.ref(args[0])])


def _softmax(c: _Ctx, x: Any, dim: Any) -> None:
    if dim is None:
        raise _Unsupported("softmax without an explicit dim")
    c.emit(OpKind.SOFTMAX, [c.ref(x)], axis=int(dim), beta=1.0)


def _binary(kind: OpKind) -> Converter:
    def convert(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        a, b = (args[0] if args else kw["input"]), (args[1] if len(args) > 1 else kw["other"])
        if c.value(kw.get("alpha", 1)) != 1:
            raise _Unsupported("add/sub with alpha != 1")
        if kw.get("rounding_mode") is not None:
            raise _Unsupported("div with a rounding_mode")
        c.emit(kind, [c.ref(a), c.ref(b)], fuse="NONE")

    return convert


def _flatten(c: _Ctx, x: Any, start: int = 0, end: int = -1) -> None:
    c.emit(OpKind.FLATTEN, [c.ref(x)], start=int(start), end=int(end))


def _flatten_call(c: _Ctx, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "start_dim", "end_dim"), args, strict=False)) | kw
    _flatten(c, a["input"], int(c.value(a.get("start_dim", 0))), int(c.value(a.get("end_dim", -1))))


def _reshape(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    node = c.node
    assert node is not None
    c.emit(
        OpKind.RESHAPE,
        [c.ref(args[0])],
        shape=tuple(int(d) for d in node.meta["tensor_meta"].shape),
    )


def _mean(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    x = args[0]
    dim = c.value(args[1] if len(args) > 1 else kw.get("dim"))
    keep = bool(c.value(args[2] if len(args) > 2 else kw.get("keepdim", False)))
    rank = len(c.tensors[c.ref(x)].shape)
    dims = range(rank) if dim is None else ([dim] if isinstance(dim, int) else dim)
    c.emit(OpKind.MEAN, [c.ref(x)], axes=tuple(sorted(int(d) % rank for d in dims)), keepdims=keep)


def _permute(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    dims = c.value(args[1:] if len(args) > 2 else (args[1] if len(args) > 1 else kw["dims"]))
    rank = len(c.tensors[c.ref(args[0])].shape)
    c.emit(OpKind.TRANSPOSE, [c.ref(args[0])], perm=tuple(int(d) % rank for d in dims))


def _transpose(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    rank = len(c.tensors[c.ref(args[0])].shape)
    d0, d1 = int(c.value(args[1])) % rank, int(c.value(args[2])) % rank
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    c.emit(OpKind.TRANSPOSE, [c.ref(args[0])], perm=tuple(perm))


def _cat(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    tensors = args[0] if args else kw["tensors"]
    dim = int(c.value(args[1] if len(args) > 1 else kw.get("dim", 0)))
    rank = len(c.tensors[c.ref(tensors[0])].shape)
    c.emit(OpKind.CONCATENATION, [c.ref(t) for t in tensors], axis=dim % rank)


def _channel_shuffle(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    groups = m.groups if m is not None else c.value(args[1] if len(args) > 1 else kw["groups"])
    c.emit(OpKind.CHANNEL_SHUFFLE, [c.ref(args[0])], groups=int(groups), axis=1)


def _matmul(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    c.emit(OpKind.BATCH_MATMUL, [c.ref(args[0]), c.ref(args[1])], adj_x=False, adj_y=False)


def _f_layer_norm(c: _Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "normalized_shape", "weight", "bias", "eps"), args, strict=False)) | kw
    ins = [c.ref(a["input"])] + [c.ref(a[k]) for k in ("weight", "bias") if a.get(k) is not None]
    c.emit(
        OpKind.LAYER_NORM,
        ins,
        normalized_shape=tuple(c.value(a["normalized_shape"])),
        eps=float(c.value(a.get("eps", 1e-5))),
    )


def _identity(kind: OpKind) -> Converter:
    return _unary(kind)


MODULES: dict[type, Converter] = {
    nn.Conv2d: _m_conv2d,
    nn.Conv3d: _m_conv3d,
    nn.BatchNorm1d: _m_batchnorm,
    nn.BatchNorm2d: _m_batchnorm,
    nn.BatchNorm3d: _m_batchnorm,
    nn.ReLU: _unary(OpKind.RELU),
    nn.ReLU6: _unary(OpKind.RELU6),
    nn.Hardtanh: _m_hardtanh,
    nn.SiLU: _unary(OpKind.SILU),
    nn.Sigmoid: _unary(OpKind.LOGISTIC),
    nn.Tanh: _unary(OpKind.TANH),
    nn.Hardswish: _unary(OpKind.HARD_SWISH),
    nn.Hardsigmoid: _unary(OpKind.HARD_SIGMOID),
    nn.GELU: _m_gelu,
    nn.Softmax: lambda c, m, a, k: _softmax(c, a[0], m.dim),
    nn.LayerNorm: _m_layernorm,
    nn.ChannelShuffle: _channel_shuffle,
    nn.MaxPool2d: _m_maxpool,
    nn.AvgPool2d: _m_avgpool,
    nn.AdaptiveAvgPool2d: lambda c, m, a, k: _adaptive(c, a[0], m.output_size),
    nn.MaxPool3d: _m_maxpool3d,
    nn.Linear: _m_linear,
    nn.Flatten: lambda c, m, a, k: _flatten(c, a[0], m.start_dim, m.end_dim),
    nn.Dropout: _identity(OpKind.DROPOUT),
    nn.Dropout1d: _identity(OpKind.DROPOUT),
    nn.Dropout2d: _identity(OpKind.DROPOUT),
    nn.Dropout3d: _identity(OpKind.DROPOUT),
    nn.AlphaDropout: _identity(OpKind.DROPOUT),
    nn.Identity: _identity(OpKind.IDENTITY),
    nn.ZeroPad2d: _m_pad,
    nn.ConstantPad2d: _m_pad,
}

FUNCTIONS: dict[Any, Converter] = {
    operator.add: _binary(OpKind.ADD),
    operator.iadd: _binary(OpKind.ADD),
    torch.add: _binary(OpKind.ADD),
    operator.sub: _binary(OpKind.SUB),
    torch.sub: _binary(OpKind.SUB),
    operator.mul: _binary(OpKind.MUL),
    operator.imul: _binary(OpKind.MUL),
    torch.mul: _binary(OpKind.MUL),
    operator.truediv: _binary(OpKind.DIV),
    torch.div: _binary(OpKind.DIV),
    torch.cat: _cat,
    torch.concat: _cat,
    torch.flatten: lambda c, m, a, k: _flatten_call(c, a, k),
    torch.reshape: _reshape,
    torch.relu: _unary(OpKind.RELU),
    F.relu: _unary(OpKind.RELU),
    F.relu6: _unary(OpKind.RELU6),
    F.hardtanh: lambda c, m, a, k: _m_hardtanh(c, None, a, k),
    torch.sigmoid: _unary(OpKind.LOGISTIC),
    F.sigmoid: _unary(OpKind.LOGISTIC),
    torch.tanh: _unary(OpKind.TANH),
    F.tanh: _unary(OpKind.TANH),
    F.silu: _unary(OpKind.SILU),
    F.hardswish: _unary(OpKind.HARD_SWISH),
    F.hardsigmoid: _unary(OpKind.HARD_SIGMOID),
    F.gelu: lambda c, m, a, k: _m_gelu(c, None, a, k),
    F.softmax: lambda c, m, a, k: _softmax(c, a[0], c.value(a[1] if len(a) > 1 else k.get("dim"))),
    torch.softmax: lambda c, m, a, k: _softmax(
        c, a[0], c.value(a[1] if len(a) > 1 else k.get("dim"))
    ),
    F.adaptive_avg_pool2d: lambda c, m, a, k: _adaptive(
        c, a[0], c.value(a[1] if len(a) > 1 else k["output_size"])
    ),
    F.avg_pool2d: _f_pool(OpKind.AVERAGE_POOL_2D),
    F.max_pool2d: _f_pool(OpKind.MAX_POOL_2D),
    F.conv2d: _f_conv2d,
    F.linear: _f_linear,
    F.dropout: _identity(OpKind.DROPOUT),
    F.dropout2d: _identity(OpKind.DROPOUT),
    F.dropout3d: _identity(OpKind.DROPOUT),
    F.pad: _f_pad,
    torch.mean: _mean,
    torch.permute: _permute,
    torch.transpose: _transpose,
    torch.matmul: _matmul,
    torch.bmm: _matmul,
    F.layer_norm: _f_layer_norm,
    torch.sqrt: _unary(OpKind.SQRT),
    torch.rsqrt: _unary(OpKind.RSQRT),
    torch.exp: _unary(OpKind.EXP),
    torch.log: _unary(OpKind.LOG),
    F.channel_shuffle: _channel_shuffle,
    torch.channel_shuffle: _channel_shuffle,
}

METHODS: dict[str, Converter] = {
    "view": _reshape,
    "reshape": _reshape,
    "squeeze": _reshape,
    "unsqueeze": _reshape,
    "flatten": lambda c, m, a, k: _flatten_call(c, a, k),
    "permute": _permute,
    "transpose": _transpose,
    "contiguous": _identity(OpKind.IDENTITY),
    "clone": _identity(OpKind.IDENTITY),
    "mean": _mean,
    "add": _binary(OpKind.ADD),
    "sub": _binary(OpKind.SUB),
    "mul": _binary(OpKind.MUL),
    "div": _binary(OpKind.DIV),
    "relu": _unary(OpKind.RELU),
    "sigmoid": _unary(OpKind.LOGISTIC),
    "tanh": _unary(OpKind.TANH),
    "softmax": lambda c, m, a, k: _softmax(c, a[0], c.value(a[1] if len(a) > 1 else k.get("dim"))),
}


def _convert_node(c: _Ctx, node: fx.Node) -> None:
    args = node.args
    kwargs = dict(node.kwargs)
    if node.op == "call_module":
        module = c.gm.get_submodule(str(node.target))
        fn = next((f for t, f in MODULES.items() if type(module) is t), None)
        if fn is None and type(module).__name__ == "StochasticDepth":
            fn = _identity(OpKind.DROPOUT)
        if fn is None:
            raise _Unsupported(f"module {type(module).__module__}.{type(module).__qualname__}")
        fn(c, module, args, kwargs)
    elif node.op == "call_function":
        fn = FUNCTIONS.get(node.target)
        if fn is None:
            raise _Unsupported(f"function {_target_name(node)}")
        fn(c, None, args, kwargs)
    elif node.op == "call_method":
        fn = METHODS.get(str(node.target))
        if fn is None:
            raise _Unsupported(f"method Tensor.{node.target}")
        fn(c, None, args, kwargs)
    else:
        raise _Unsupported(f"fx node kind {node.op}")


def _example_list(example_inputs: Any) -> list[torch.Tensor]:
    if isinstance(example_inputs, torch.Tensor):
        return [example_inputs]
    items = list(example_inputs)
    if not all(isinstance(x, torch.Tensor) for x in items):
        raise IRError("example_inputs must be a tensor or a sequence of tensors")
    return items


def _trace(module: nn.Module, name: str) -> fx.GraphModule:
    tracer = _Tracer()
    if tracer.is_leaf_module(module, ""):  # fx always traces into the root: wrap a bare layer
        module = nn.Sequential(module)
    try:
        graph = tracer.trace(module)
        return fx.GraphModule(tracer.root, graph, name)
    except Exception as exc:
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if f"{os.sep}torch{os.sep}" not in f.filename and f.filename != __file__
        ]
        where = (
            f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno} "
            f"(`{(frames[-1].line or '').strip()}`)"
            if frames
            else ""
        )
        raise IRError(
            f"torch.fx cannot trace `{name}`{where}: {type(exc).__name__}: {exc}. "
            "Data-dependent Python control flow and non-tensor outputs do not trace; "
            "make that branch static or mark the module a leaf."
        ) from exc


def from_torch(
    module: nn.Module, example_inputs: Any, name: str | None = None, optimize: bool = True
) -> Graph:
    """Import `module` (in eval mode) into the flat IR; `optimize` runs the default passes."""
    name = name or type(module).__name__
    if module.training:
        raise IRError(
            f"`{name}` is in training mode: call .eval() before importing it "
            "(BatchNorm and dropout trace differently in training)"
        )
    examples = _example_list(example_inputs)
    gm = _trace(module, name)
    prop = _ValueProp(gm)
    with torch.no_grad():
        prop.propagate(*examples)
    c = _Ctx(gm, prop.values)
    inputs: list[str] = []
    outputs: list[str] = []
    failed: set[fx.Node] = set()
    for node in gm.graph.nodes:
        c.node = node
        if node.op == "placeholder":
            meta = node.meta["tensor_meta"]
            c.tensors[node.name] = Tensor(node.name, tuple(int(d) for d in meta.shape))
            c.refs[node] = node.name
            inputs.append(node.name)
        elif node.op == "get_attr":
            value = (
                getattr(gm, str(node.target))
                if "." not in str(node.target)
                else (
                    gm.get_parameter(str(node.target))
                    if _has_param(gm, str(node.target))
                    else gm.get_buffer(str(node.target))
                )
            )
            c.refs[node] = c.const(str(node.target), value.detach().numpy().astype(np.float32))
        elif node.op == "output":
            outputs += _outputs(c, node.args[0])
        elif node in prop.values and not _holds_tensor(prop.values[node]):
            continue  # a compile-time value (x.size(0), shape arithmetic): no op
        elif node.target is operator.getitem and node.args[0] in failed:
            failed.add(node)  # its producer is already reported
            _placeholder_for(c, node)
        else:
            try:
                _convert_node(c, node)
            except _Unsupported as exc:
                missing = [a for a in node.all_input_nodes if a in failed and a not in c.refs]
                if not missing:  # else only a consequence of an earlier, reported failure
                    c.unsupported.append(
                        f"`{node.name}`: {exc} ({_target_name(node)}) at "
                        f"{_line(node) or 'unknown line'}"
                    )
                failed.add(node)
                _placeholder_for(c, node)
    if c.unsupported:
        raise UnsupportedError(
            f"cannot import `{name}`: {len(c.unsupported)} unsupported construct(s):\n  "
            + "\n  ".join(c.unsupported),
            c.unsupported,
        )
    graph = Graph(
        name,
        c.tensors,
        tuple(c.ops),
        tuple(inputs),
        tuple(outputs),
        meta={"source": "torch.fx", "module": type(module).__qualname__},
    )
    verify(graph)
    return run_passes(graph) if optimize else graph


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return any(_holds_tensor(v) for v in value)
    return isinstance(value, torch.Tensor)


def _has_param(gm: fx.GraphModule, target: str) -> bool:
    return target in dict(gm.named_parameters())


def _outputs(c: _Ctx, out: Any) -> list[str]:
    items = list(out) if isinstance(out, list | tuple) else [out]
    bad = [str(o) for o in items if not c.is_tensor(o)]
    if bad:
        raise IRError(f"model outputs {bad} are not tensors (only tensor outputs import)")
    return [c.refs[o] for o in items]


def _placeholder_for(c: _Ctx, node: fx.Node) -> None:
    """Keep converting after an unsupported node, so every problem is reported at once."""
    meta = node.meta.get("tensor_meta")
    if meta is not None and hasattr(meta, "shape"):
        c.tensors[node.name] = Tensor(node.name, tuple(int(d) for d in meta.shape))
        c.refs[node] = node.name
