"""Resampling in float32: RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (TFLite's float reference
semantics, which are torch's for the modes the importer maps onto them).

Per axis, with scale = (in-1)/(out-1) under align_corners (out > 1), else in/out (float32):
RESIZE_NEAREST_NEIGHBOR: src = min(f((dst + o) * scale), in - 1), o = 0.5 with
    half_pixel_centers (then also max(src, 0)), f = round under align_corners, else floor.
    torch 'nearest' is floor(dst * scale); 'nearest-exact' is half_pixel_centers.
RESIZE_BILINEAR: p = (dst + 0.5) * scale - 0.5 with half_pixel_centers, else dst * scale;
    lo = max(floor(p), 0), hi = min(ceil(p), in - 1), out = x[lo] (1 - (p - lo)) + x[hi] (p - lo)
    per axis. torch bilinear align_corners=False clamps p at 0 and is half_pixel_centers; with
    align_corners=True it is align_corners here.
DEPTH_TO_SPACE (NNAPI/TFLite order, in either layout):
    out[n, h*r + i, w*r + j, c] = in[n, h, w, (i*r + j)*C + c]
    (torch's pixel_shuffle takes channel c*r*r + i*r + j: the importer permutes, see
    mdla_ir/importer/resample.py)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mdla_ir.attrs import BlockAttrs, ResizeAttrs
from mdla_ir.graph import Op
from mdla_ir.interp.registry import Array, from_nhwc, kernel, to_nhwc
from mdla_ir.ops import OpKind


def axis_scale(n_in: int, n_out: int, align: bool) -> np.float32:
    if align and n_out > 1:
        return np.float32(n_in - 1) / np.float32(n_out - 1)
    return np.float32(n_in) / np.float32(n_out)


def nearest_index(n_in: int, n_out: int, align: bool, half: bool) -> Array:
    """The source index of every output coordinate on one axis (float32, as TFLite)."""
    scale = axis_scale(n_in, n_out, align)
    p = (np.arange(n_out, dtype=np.float32) + np.float32(0.5 if half else 0.0)) * scale
    src = np.floor(p)
    if align:  # TfLiteRound: half away from zero (p >= 0)
        src = np.where(p - src >= np.float32(0.5), src + 1, src)
    idx: Array = np.minimum(src.astype(np.int64), n_in - 1)
    return np.maximum(idx, 0) if half else idx


def _bilinear_axis(n_in: int, n_out: int, align: bool, half: bool) -> tuple[Array, Array, Array]:
    scale = axis_scale(n_in, n_out, align)
    d = np.arange(n_out, dtype=np.float32)
    p = (d + np.float32(0.5)) * scale - np.float32(0.5) if half else d * scale
    lo = np.maximum(np.floor(p).astype(np.int64), 0)
    hi = np.minimum(np.ceil(p).astype(np.int64), n_in - 1)
    return lo, hi, (p - lo).astype(np.float32)


@kernel(OpKind.RESIZE_NEAREST_NEIGHBOR)
def resize_nearest(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    a, x = ResizeAttrs.of(op), to_nhwc(args[0], layout)
    (oh, ow), (_, h, w, _) = a.size, x.shape
    rows = nearest_index(h, oh, a.align_corners, a.half_pixel_centers)
    cols = nearest_index(w, ow, a.align_corners, a.half_pixel_centers)
    return [from_nhwc(np.ascontiguousarray(x[:, rows][:, :, cols]), layout)]


@kernel(OpKind.RESIZE_BILINEAR)
def resize_bilinear(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    a, x = ResizeAttrs.of(op), to_nhwc(args[0], layout)
    (oh, ow), (_, h, w, _) = a.size, x.shape
    y0, y1, dy = _bilinear_axis(h, oh, a.align_corners, a.half_pixel_centers)
    x0, x1, dx = _bilinear_axis(w, ow, a.align_corners, a.half_pixel_centers)
    dy, dx = dy[None, :, None, None], dx[None, None, :, None]
    # Each input row is interpolated along x once (an upsampling reads it for many output
    # rows), then gathered per output row: row y0[i] of `across` is x[:, y0[i]]'s horizontal
    # pass, the same operations on the same operands as when it was taken per output row.
    across = x[:, :, x0] * (1 - dx) + x[:, :, x1] * dx
    top, bottom = across[:, y0], across[:, y1]
    return [from_nhwc((top * (1 - dy) + bottom * dy).astype(np.float32), layout)]


def depth_to_space_nhwc(x: Array, r: int) -> Array:
    """NHWC depth-to-space in NNAPI/TFLite channel order ((i*r + j)*C + c)."""
    n, h, w, cc = x.shape
    c = cc // (r * r)
    y = x.reshape(n, h, w, r, r, c).transpose(0, 1, 3, 2, 4, 5)
    return np.ascontiguousarray(y.reshape(n, h * r, w * r, c))


@kernel(OpKind.DEPTH_TO_SPACE)
def depth_to_space(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    r = BlockAttrs.of(op).block_size
    return [from_nhwc(depth_to_space_nhwc(to_nhwc(args[0], layout), r), layout)]
