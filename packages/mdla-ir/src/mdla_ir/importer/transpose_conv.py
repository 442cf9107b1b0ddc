"""`nn.ConvTranspose2d` / `F.conv_transpose2d` -> TRANSPOSE_CONV_2D (groups 1, dilation 1).

torch: out = (in - 1) * s - 2p + k + output_padding per axis: the full (in - 1) * s + k output
cropped by p before and p - output_padding after. TRANSPOSE_CONV_2D's explicit pads (t, b, l, r)
are those crops; a negative crop (output_padding > padding) has no Neuron form and is refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.importer.context import Ctx, Unsupported, pair
from mdla_ir.importer.layers import is_const
from mdla_ir.ops import OpKind

_KEYS = ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")


def _emit(
    c: Ctx, x: Any, w: str, b: str | None, stride: Any, padding: Any, out_pad: Any, groups: Any,
    dilation: Any,
) -> None:  # fmt: skip
    if int(groups) != 1:
        raise Unsupported(f"ConvTranspose2d groups={groups} (only groups=1 imports)")
    if pair(dilation) != (1, 1):
        raise Unsupported(f"ConvTranspose2d dilation={dilation} (only dilation=1 imports)")
    if isinstance(padding, str):
        raise Unsupported(f"ConvTranspose2d padding={padding!r}")
    (ph, pw), (oh, ow) = pair(padding), pair(out_pad)
    if oh > ph or ow > pw:
        raise Unsupported(
            f"ConvTranspose2d output_padding={out_pad} > padding={padding}: the extra rows "
            "need a negative crop, which TRANSPOSE_CONV_2D cannot express"
        )
    if b is None:
        cout = c.tensors[w].shape[1]
        b = c.const(f"{w}.zero_bias", np.zeros(cout, dtype=np.float32))
    c.emit(
        OpKind.TRANSPOSE_CONV_2D,
        [c.ref(x), w, b],
        stride=pair(stride),
        padding=(ph, ph - oh, pw, pw - ow),
        dilation=(1, 1),
        groups=1,
        fuse="NONE",
    )


def m_conv_transpose2d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.padding_mode != "zeros":
        raise Unsupported(f"padding_mode={m.padding_mode!r} (only zeros is imported)")
    if len(args) > 1 or kw.get("output_size") is not None:
        raise Unsupported("ConvTranspose2d called with output_size")
    q = str(c.node.target) if c.node else ""
    w = c.param(m, "weight", q)
    assert w is not None
    b = c.param(m, "bias", q)
    _emit(c, args[0], w, b, m.stride, m.padding, m.output_padding, m.groups, m.dilation)


def f_conv_transpose2d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(_KEYS, args, strict=False)) | kw
    for key in ("weight", "bias"):
        if a.get(key) is not None and not is_const(c, a[key]):
            raise Unsupported(f"conv_transpose2d {key} is computed at run time")
    b = c.ref(a["bias"]) if a.get("bias") is not None else None
    stride, padding = c.value(a.get("stride", 1)), c.value(a.get("padding", 0))
    out_pad, groups = c.value(a.get("output_padding", 0)), c.value(a.get("groups", 1))
    w = c.ref(a["weight"])
    _emit(c, a["input"], w, b, stride, padding, out_pad, groups, c.value(a.get("dilation", 1)))
