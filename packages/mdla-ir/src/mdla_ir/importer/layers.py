"""Converters for layers: convolutions, normalization, pools, linear, padding.

Each takes the context, the module (or None for a function call), the node's positional args and
keyword args, and emits one op (or raises `Unsupported` saying why not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdla_ir.importer.context import (
    Ctx,
    Unsupported,
    bound,
    pair,
    same_pads,
    triple,
)
from mdla_ir.importer.dilated_pool import dilated_max_pool2d, one_dilation
from mdla_ir.importer.strided import mode_pad
from mdla_ir.ops import OpKind


def _conv2d_op(
    c: Ctx, x: Any, w: str, b: str | None, stride: Any, padding: Any, dilation: Any, groups: int
) -> None:
    wshape = c.tensors[w].shape
    if b is None:
        b = c.const(f"{w}.zero_bias", np.zeros(wshape[0], dtype=np.float32))
    k, d = wshape[2:], pair(dilation)
    if isinstance(padding, str):
        pads = same_pads(k, d) if padding == "same" else [(0, 0), (0, 0)]
    else:
        ph, pw = pair(padding)
        pads = [(ph, ph), (pw, pw)]
    c.emit(
        OpKind.CONV_2D,
        [c.ref(x), w, b],
        stride=pair(stride),
        dilation=d,
        padding=(pads[0][0], pads[0][1], pads[1][0], pads[1][1]),
        groups=int(groups),
        fuse="NONE",
    )


def m_conv2d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.padding_mode != "zeros":
        raise Unsupported(f"padding_mode={m.padding_mode!r} (only zeros is imported)")
    q = str(c.node.target) if c.node else ""
    w = c.param(m, "weight", q)
    assert w is not None
    _conv2d_op(c, args[0], w, c.param(m, "bias", q), m.stride, m.padding, m.dilation, m.groups)


def f_conv2d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    a = dict(zip(names, args, strict=False)) | kw
    for key in ("weight", "bias"):
        if a.get(key) is not None and not is_const(c, a[key]):
            raise Unsupported(f"conv2d {key} is computed at run time (only constants import)")
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


def is_const(c: Ctx, a: Any) -> bool:
    return c.is_tensor(a) and c.tensors[c.refs[a]].is_const


def m_conv3d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.padding_mode != "zeros":
        raise Unsupported(f"padding_mode={m.padding_mode!r} (only zeros is imported)")
    q = str(c.node.target) if c.node else ""
    w = c.param(m, "weight", q)
    assert w is not None
    b = c.param(m, "bias", q) or c.const(f"{q}.zero_bias", np.zeros(m.out_channels, np.float32))
    if isinstance(m.padding, str):
        pads = same_pads(m.kernel_size, m.dilation) if m.padding == "same" else [(0, 0)] * 3
        if any(lo != hi for lo, hi in pads):
            raise Unsupported("Conv3d padding='same' with an even kernel (asymmetric padding)")
        pad = tuple(lo for lo, _ in pads)
    else:
        pad = triple(m.padding)
    c.emit(
        OpKind.CONV_3D,
        [c.ref(args[0]), w, b],
        stride=triple(m.stride),
        padding=pad,
        dilation=triple(m.dilation),
        groups=int(m.groups),
    )


def m_batchnorm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.running_mean is None:
        raise Unsupported("BatchNorm without running statistics (track_running_stats=False)")
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


def _max_pool2d(
    c: Ctx, x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool
) -> None:
    """MAX_POOL_2D (average pools are `pools.py`'s: their divisor needs more care)."""
    k = pair(kernel)
    rate = one_dilation(k, pair(dilation))
    s = pair(stride) if stride not in (None, [], ()) else k
    size = c.tensors[c.ref(x)].shape[2:]
    span = tuple((kk - 1) * rate + 1 for kk in k)
    pads = _pool_pads(size, span, s, pair(padding), bool(ceil_mode))
    if rate > 1:
        dilated_max_pool2d(c, c.ref(x), k, s, pads, rate)
        return
    c.emit(OpKind.MAX_POOL_2D, [c.ref(x)], kernel=k, stride=s, padding=pads, fuse="NONE")


def m_maxpool(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.return_indices:
        raise Unsupported("MaxPool2d(return_indices=True)")
    _max_pool2d(c, args[0], m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode)


def f_maxpool(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    names = ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
    a = bound(c, names, args, kw)
    if a.get("return_indices"):
        raise Unsupported("max_pool2d(return_indices=True)")
    _max_pool2d(
        c,
        a["input"],
        a["kernel_size"],
        a.get("stride"),
        a.get("padding", 0),
        a.get("dilation", 1),
        a.get("ceil_mode", False),
    )


def adaptive(c: Ctx, x: Any, output_size: Any) -> None:
    shape = c.tensors[c.ref(x)].shape
    oh, ow = (
        pair(output_size)
        if not isinstance(output_size, list | tuple)
        else (
            output_size[0] if output_size[0] is not None else shape[2],
            output_size[1] if output_size[1] is not None else shape[3],
        )
    )
    c.emit(OpKind.ADAPTIVE_AVG_POOL_2D, [c.ref(x)], output_size=(int(oh), int(ow)))


def m_maxpool3d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.return_indices or m.ceil_mode or triple(m.dilation) != (1, 1, 1):
        raise Unsupported("MaxPool3d with return_indices, ceil_mode or dilation")
    k = triple(m.kernel_size)
    s = triple(m.stride) if m.stride is not None else k
    c.emit(OpKind.MAX_POOL_3D, [c.ref(args[0])], kernel=k, stride=s, padding=triple(m.padding))


def m_linear(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    q = str(c.node.target) if c.node else ""
    b = c.param(m, "bias", q) or c.const(f"{q}.zero_bias", np.zeros(m.out_features, np.float32))
    c.emit(OpKind.FULLY_CONNECTED, [c.ref(args[0]), c.param(m, "weight", q), b], fuse="NONE")


def f_linear(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "weight", "bias"), args, strict=False)) | kw
    if not is_const(c, a["weight"]):
        raise Unsupported("linear weight is computed at run time (only constants import)")
    w = c.ref(a["weight"])
    b = (
        c.ref(a["bias"])
        if a.get("bias") is not None
        else c.const(f"{w}.zero_bias", np.zeros(c.tensors[w].shape[0], np.float32))
    )
    c.emit(OpKind.FULLY_CONNECTED, [c.ref(a["input"]), w, b], fuse="NONE")


def m_layernorm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    q = str(c.node.target) if c.node else ""
    c.emit(
        OpKind.LAYER_NORM,
        [c.ref(args[0]), c.param(m, "weight", q), c.param(m, "bias", q)],
        normalized_shape=tuple(m.normalized_shape),
        eps=float(m.eps),
    )


def _pad4(c: Ctx, x: Any, pad: Sequence[int], value: float) -> None:
    """F.pad order: (last_lo, last_hi, second_last_lo, ...) -> per-dim (before, after)."""
    rank = len(c.tensors[c.ref(x)].shape)
    pads = [(0, 0)] * rank
    for i in range(len(pad) // 2):
        pads[rank - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise Unsupported("negative padding (cropping)")
    c.emit(OpKind.PAD, [c.ref(x)], pads=tuple(pads), value=float(value))


def m_pad(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    _pad4(c, args[0], m.padding, getattr(m, "value", 0.0))


def f_pad(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "pad", "mode", "value"), args, strict=False)) | kw
    mode = c.value(a.get("mode", "constant"))
    if mode != "constant":
        mode_pad(c, a["input"], [int(p) for p in c.value(a["pad"])], str(mode))
        return
    value = c.value(a.get("value"))
    _pad4(c, a["input"], c.value(a["pad"]), 0.0 if value is None else value)
