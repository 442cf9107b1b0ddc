"""Weights to int8: symmetric, per channel (or per tensor), in cache-sized chunks.

    q, params = quantize_weights(w, channel_dim, min_scale)

Each value is clip(round_half_away(float64(w) / float64(s)), -127, 127) as int8. The rounding
runs over chunks of `CHUNK` values along the first axis rather than on whole float64 copies of
the tensor: the operations per value are the same, but the temporaries stay in cache instead
of being fresh pages (resnet18's 11.7 M weights made four 94 MB float64 temporaries, and their
page faults cost more than the arithmetic).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir import QuantParams
from mdla_quant.arith import round_half_away

Array = np.ndarray[Any, Any]
CHUNK = 1 << 16  # values per rounding pass (512 KiB of float64)


def quantize_weights(
    w: Array, channel_dim: int | None, min_scale: Array | None = None, amax: Array | None = None
) -> tuple[Array, QuantParams]:
    """Symmetric int8 in [-127, 127]: s = max|w| / 127 per channel (or tensor).

    `min_scale` raises s where needed so the channel's bias fits in int32 (TFLite's converter
    adjusts weight scales the same way): s >= |b| / (in_scale * 2^30). `amax` replaces max|w|
    per channel (a clipping range, `weight_fit.mse_amax`); values beyond it clip to +-127.
    """
    scale = weight_scales(w, channel_dim, min_scale, amax)
    shape = [1] * w.ndim
    if channel_dim is not None:
        shape[channel_dim] = -1
    q = _round_chunks(w, scale.astype(np.float64).reshape(shape), channel_dim == 0)
    return q, QuantParams(tuple(float(s) for s in scale), (0,) * scale.size, channel_dim)


def weight_scales(
    w: Array, channel_dim: int | None, min_scale: Array | None = None, amax: Array | None = None
) -> Array:
    """`quantize_weights`' float32 scales (one per channel, or one), without the rounding."""
    amax = _abs_max(w, channel_dim) if amax is None else amax
    scale64 = np.where(amax > 0, amax / 127.0, 1.0)
    if min_scale is not None:
        scale64 = np.maximum(scale64, min_scale)
    scale: Array = scale64.astype(np.float32)
    return scale


def _abs_max(w: Array, channel_dim: int | None) -> Array:
    """max |float64(w)| per channel (or of all), float64. For float32 or float64 w it is taken
    in w's own type: the widening, |.| and max are exact, so the value is the same."""
    a = w if w.dtype in (np.float32, np.float64) else w.astype(np.float64)
    if channel_dim is None:
        return np.array([np.abs(a).max(initial=0.0)], dtype=np.float64)
    per = np.abs(np.moveaxis(a, channel_dim, 0)).reshape(w.shape[channel_dim], -1)
    amax: Array = per.max(1).astype(np.float64)
    return amax


def _round_chunks(w: Array, scale: Array, per_row: bool) -> Array:
    """int8 clip(round_half_away(float64(w) / scale), -127, 127), `scale` broadcast against w;
    `per_row`: scale varies along w's first axis (sliced with each chunk of rows)."""
    out = np.empty(w.shape, dtype=np.int8)
    if w.ndim == 0 or w.size == 0:
        q = np.clip(round_half_away(w.astype(np.float64) / scale), -127, 127)
        out[...] = q.astype(np.int8)
        return out
    rows = max(1, CHUNK // max(1, w[0].size))
    for r0 in range(0, w.shape[0], rows):
        part = w[r0 : r0 + rows].astype(np.float64)
        np.divide(part, scale[r0 : r0 + rows] if per_row else scale, out=part)
        q = round_half_away(part)
        np.clip(q, -127, 127, out=q)
        out[r0 : r0 + rows] = q.astype(np.int8)
    return out
