"""Converters for upsampling: `F.interpolate`, `nn.Upsample`, `nn.UpsamplingNearest2d` and
`nn.UpsamplingBilinear2d` become RESIZE_NEAREST_NEIGHBOR or RESIZE_BILINEAR (4-D inputs).

torch mode             -> op                      flags
'nearest'              -> RESIZE_NEAREST_NEIGHBOR (src = floor(dst * in/out): neither flag)
'nearest-exact'        -> RESIZE_NEAREST_NEIGHBOR half_pixel_centers
'bilinear', ac=False   -> RESIZE_BILINEAR         half_pixel_centers
'bilinear', ac=True    -> RESIZE_BILINEAR         align_corners
The output size is the traced one. With a scale_factor torch maps coordinates by 1/scale_factor
(unless recompute_scale_factor or bilinear align_corners), the ops by in/out: the importer
computes both samplings per axis (`torch_sampling`, ATen's float32 arithmetic) and maps the
call where they read the same source indices (nearest: often, even at 7 -> 10 by 1.5) or the
same source coordinates (bilinear); others are refused, naming the first output that differs,
rather than imported with shifted sampling points.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.ops import OpKind

Array = np.ndarray[Any, Any]

_KEYS = ("input", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor")


def torch_sampling(mode: str, n_in: int, n_out: int, scale: float | None) -> Array:
    """Where torch reads each output coordinate of one axis (align_corners=False): the source
    index for nearest / nearest-exact, the source coordinate (clamped at 0) for bilinear, in
    float32 as ATen computes it; `scale` the scale_factor (None: from the sizes)."""
    given = np.float32(1.0 / scale) if scale else None
    step = given if given is not None else np.float32(n_in) / np.float32(n_out)
    d = np.arange(n_out, dtype=np.float32)
    if mode == "bilinear":
        p = step * (d + np.float32(0.5)) - np.float32(0.5)
        coords: Array = np.maximum(p, np.float32(0.0))
        return coords
    if mode == "nearest" and n_out in (n_in, 2 * n_in):
        return np.arange(n_out) * n_in // n_out
    offset = np.float32(0.5 if mode == "nearest-exact" else 0.0)
    index: Array = np.minimum(np.floor((d + offset) * step).astype(np.int64), n_in - 1)
    return index


def _same_sampling(mode: str, n_in: int, n_out: int, s: float) -> None:
    """Unsupported unless torch at scale_factor `s` reads what the resize op (at n_in/n_out)
    does on this axis."""
    want, have = torch_sampling(mode, n_in, n_out, s), torch_sampling(mode, n_in, n_out, None)
    if np.array_equal(want, have):
        return
    at = int(np.flatnonzero(want != have)[0])
    raise Unsupported(
        f"interpolate mode={mode!r} scale_factor={s} on size {n_in} -> {n_out}: torch samples "
        f"at 1/{s}, the resize ops at {n_in}/{n_out}; output {at} reads source {want[at]} in "
        f"torch, {have[at]} in the op",
        f"pass size={n_out} (torch then samples at {n_in}/{n_out}) or recompute_scale_factor=True",
    )


def _resize(
    c: Ctx, x: Any, scale: Any, mode: str, align: bool | None, recompute: bool | None
) -> None:
    shape = c.tensors[c.ref(x)].shape
    node = c.node
    assert node is not None
    out = tuple(int(d) for d in node.meta["tensor_meta"].shape)
    if len(shape) != 4:
        raise Unsupported(f"interpolate of a rank-{len(shape)} input (only 4-D NCHW imports)")
    if scale is not None and not recompute and not (mode == "bilinear" and align):
        scales = (scale, scale) if isinstance(scale, int | float) else tuple(scale)
        for n_in, n_out, s in zip(shape[2:], out[2:], scales, strict=True):
            _same_sampling(mode, n_in, n_out, float(s))
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
