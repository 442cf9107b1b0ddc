"""Converters for upsampling: `F.interpolate`, `nn.Upsample`, `nn.UpsamplingNearest2d` and
`nn.UpsamplingBilinear2d` become RESIZE_NEAREST_NEIGHBOR or RESIZE_BILINEAR (4-D inputs).

torch mode             -> op                      flags
'nearest'              -> RESIZE_NEAREST_NEIGHBOR (src = floor(dst * in/out): neither flag)
'nearest-exact'        -> RESIZE_NEAREST_NEIGHBOR half_pixel_centers
'bilinear', ac=False   -> RESIZE_BILINEAR         half_pixel_centers
'bilinear', ac=True    -> RESIZE_BILINEAR         align_corners
The output size is the traced one. With a scale_factor torch maps coordinates by 1/scale_factor
(unless recompute_scale_factor), the ops by in/out: the two agree only when in/out == 1/s (in
float32), so other factors are refused rather than imported with shifted sampling points.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.ops import OpKind

_KEYS = ("input", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor")


def _resize(
    c: Ctx, x: Any, scale: Any, mode: str, align: bool | None, recompute: bool | None
) -> None:
    shape = c.tensors[c.ref(x)].shape
    node = c.node
    assert node is not None
    out = tuple(int(d) for d in node.meta["tensor_meta"].shape)
    if len(shape) != 4:
        raise Unsupported(f"interpolate of a rank-{len(shape)} input (only 4-D NCHW imports)")
    if scale is not None and not recompute:
        scales = (scale, scale) if isinstance(scale, int | float) else tuple(scale)
        for n_in, n_out, s in zip(shape[2:], out[2:], scales, strict=True):
            if np.float32(1.0 / float(s)) != np.float32(n_in) / np.float32(n_out):
                raise Unsupported(
                    f"interpolate scale_factor={s} on size {n_in} -> {n_out}: torch samples at "
                    f"1/{s}, the resize ops at {n_in}/{n_out}; pass size= or "
                    "recompute_scale_factor=True"
                )
    size = out[2:]
    if mode in ("nearest", "nearest-exact"):
        if align:
            raise Unsupported(f"interpolate mode={mode!r} with align_corners")
        half = mode == "nearest-exact"
        c.emit(OpKind.RESIZE_NEAREST_NEIGHBOR, [c.ref(x)], size=size, half_pixel_centers=half)
    elif mode == "bilinear":
        corners = bool(align)
        c.emit(
            OpKind.RESIZE_BILINEAR,
            [c.ref(x)],
            size=size,
            align_corners=corners,
            half_pixel_centers=not corners,
        )
    else:
        raise Unsupported(f"interpolate mode={mode!r} (nearest, nearest-exact, bilinear import)")


def f_interpolate(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    given = dict(zip(_KEYS, args, strict=False)) | kw
    a = {k: v if k == "input" else c.value(v) for k, v in given.items()}
    if a.get("antialias"):
        raise Unsupported("interpolate with antialias=True")
    _resize(
        c,
        a["input"],
        a.get("scale_factor"),
        a.get("mode", "nearest"),
        a.get("align_corners"),
        a.get("recompute_scale_factor"),
    )


def m_upsample(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """nn.Upsample and its subclasses (UpsamplingNearest2d; UpsamplingBilinear2d sets
    align_corners=True)."""
    _resize(
        c,
        args[0] if args else kw["input"],
        m.scale_factor,
        m.mode,
        m.align_corners,
        getattr(m, "recompute_scale_factor", None),
    )
