"""Converters for 1-D layers on (N, C, L): Conv1d, BatchNorm1d, MaxPool1d, AvgPool1d,
AdaptiveAvgPool1d, each as its 2-D op on the H = 1 image (N, C, 1, L) between two RESHAPEs.

    conv1d(x)[n, o, l] = sum_{i, k} w[o, i, k] x[n, i, l*s + k*d - p]
                       = conv2d(x[:, :, None, :], w[:, :, None, :])[n, o, 0, l]

with stride (1, s), dilation (1, d) and pads (0, 0, p, p): the same sums over the same products,
so the rewrite is exact in float and in int8 (the MDLA's CONV_2D and pools see a 1-row image).
The RESHAPE pairs between consecutive layers collapse in legalization (canonicalize_reshapes,
and elementwise ops between them take the 4-D form: `mdla_legalize.rules.lift`).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from mdla_ir.importer.context import Converter, Ctx, Unsupported
from mdla_ir.importer.layers import m_batchnorm
from mdla_ir.importer.pools import avg_pool_attrs, max_pool_attrs
from mdla_ir.importer.shaped import emit_shaped, reshape_to
from mdla_ir.ops import OpKind


def _single(v: Any) -> int:
    return int(v[0]) if isinstance(v, list | tuple) else int(v)


def _image(c: Ctx, x: Any) -> tuple[str, tuple[int, ...]]:
    """The (N, C, 1, L) image of a 1-D activation (N, C, L)."""
    name = c.ref(x)
    shape = c.tensors[name].shape
    if len(shape) != 3:
        raise Unsupported(f"a 1-D layer on a rank-{len(shape)} input (wants (N, C, L))")
    n, ch, length = shape
    return reshape_to(c, name, (n, ch, 1, length), "as_image"), shape


def _finish(c: Ctx, kind: OpKind, inputs: list[str], **attrs: Any) -> None:
    """The 2-D op to a fresh (N, C', 1, L') tensor, then the RESHAPE to the node's output."""
    node = c.node
    assert node is not None
    n, ch, length = (int(d) for d in node.meta["tensor_meta"].shape)
    y4 = emit_shaped(c, kind, inputs, (n, ch, 1, length), "image", **attrs)
    c.emit(OpKind.RESHAPE, [y4], shape=(n, ch, length))


def m_conv1d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.padding_mode != "zeros":
        raise Unsupported(f"padding_mode={m.padding_mode!r} (only zeros is imported)")
    x4, _ = _image(c, args[0])
    q = str(c.node.target) if c.node else ""
    w = m.weight.detach().cpu().numpy().astype(np.float32)
    filt = c.const(f"{q}.weight", w[:, :, None, :])
    bias = (
        m.bias.detach().cpu().numpy().astype(np.float32)
        if m.bias is not None
        else np.zeros(m.out_channels, np.float32)
    )
    k, d = int(m.kernel_size[0]), _single(m.dilation)
    if isinstance(m.padding, str):
        total = d * (k - 1) if m.padding == "same" else 0
        left, right = total // 2, total - total // 2
    else:
        left = right = _single(m.padding)
    _finish(
        c,
        OpKind.CONV_2D,
        [x4, filt, c.const(f"{q}.bias", bias)],
        stride=(1, _single(m.stride)),
        dilation=(1, d),
        padding=(0, 0, left, right),
        groups=int(m.groups),
        fuse="NONE",
    )


def m_batchnorm1d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """BatchNorm1d on (N, C, L) as BatchNorm on the image; on (N, C) as it is."""
    if len(c.tensors[c.ref(args[0])].shape) != 3:
        m_batchnorm(c, m, args, kw)
        return
    if m.running_mean is None:
        raise Unsupported("BatchNorm without running statistics (track_running_stats=False)")
    x4, _ = _image(c, args[0])
    q = str(c.node.target) if c.node else ""
    n = m.num_features
    gamma = c.param(m, "weight", q) or c.const(f"{q}.weight", np.ones(n, np.float32))
    beta = c.param(m, "bias", q) or c.const(f"{q}.bias", np.zeros(n, np.float32))
    mean, var = c.param(m, "running_mean", q), c.param(m, "running_var", q)
    assert mean is not None
    assert var is not None
    _finish(c, OpKind.BATCH_NORM, [x4, mean, var, gamma, beta], eps=float(m.eps))


def m_maxpool1d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.return_indices or _single(m.dilation) != 1:
        raise Unsupported("MaxPool1d with return_indices or dilation")
    x4, shape = _image(c, args[0])
    k = _single(m.kernel_size)
    s = _single(m.stride) if m.stride is not None else k
    attrs = max_pool_attrs((1, shape[2]), (1, k), (1, s), (0, _single(m.padding)), m.ceil_mode)
    _finish(c, OpKind.MAX_POOL_2D, [x4], **attrs)


def m_avgpool1d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    x4, shape = _image(c, args[0])
    k = _single(m.kernel_size)
    s = _single(m.stride) if m.stride is not None else k
    p = _single(m.padding)
    pads, attrs = avg_pool_attrs(
        (1, shape[2]), (1, k), (1, s), (0, p), m.ceil_mode, m.count_include_pad
    )
    if pads is not None:
        n, ch, _, length = c.tensors[x4].shape
        x4 = emit_shaped(
            c,
            OpKind.PAD,
            [x4],
            (n, ch, 1, length + 2 * p),
            "pad",
            pads=((0, 0), (0, 0), (0, 0), (p, p)),
            value=0.0,
        )
    _finish(c, OpKind.AVERAGE_POOL_2D, [x4], **attrs)


def m_adaptive_avgpool1d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    x4, _ = _image(c, args[0])
    _finish(c, OpKind.ADAPTIVE_AVG_POOL_2D, [x4], output_size=(1, _single(m.output_size)))


def _functional(make: Converter, names: tuple[str, ...], **defaults: Any) -> Converter:
    """A converter of F.<pool>1d from the module converter: its arguments as attributes."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        a = defaults | {k: c.value(v) for k, v in dict(zip(names, args[1:], strict=False)).items()}
        a |= {k: c.value(v) for k, v in kw.items() if k != "input"}
        if a.get("stride") in (None, [], ()):
            a["stride"] = a.get("kernel_size")
        make(c, SimpleNamespace(**a), (args[0] if args else kw["input"],), {})

    return convert


f_maxpool1d = _functional(
    m_maxpool1d,
    ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"),
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode=False,
    return_indices=False,
)
f_avgpool1d = _functional(
    m_avgpool1d,
    ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"),
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
)
f_adaptive_avgpool1d = _functional(m_adaptive_avgpool1d, ("output_size",))
