"""Frame resizing and cropping in numpy (no OpenCV/PIL needed on a phone).

`resize` is separable linear interpolation whose triangle filter is widened by the scale
factor when shrinking (antialiased, as PIL's BILINEAR does): each output pixel is a weighted
mean of the source pixels within one output pixel of its centre; same size is the identity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def _weights(n_in: int, n_out: int) -> Array:
    """(n_out, n_in) interpolation matrix; rows sum to 1."""
    scale = n_in / n_out
    support = max(scale, 1.0)
    centres = (np.arange(n_out) + 0.5) * scale
    src = np.arange(n_in) + 0.5
    w = np.maximum(0.0, 1.0 - np.abs(src[None, :] - centres[:, None]) / support)
    w /= w.sum(axis=1, keepdims=True)
    return w.astype(np.float32)


def resize(frames: Array, size: tuple[int, int]) -> Array:
    """(T, H, W, C) -> (T, h, w, C) float32, values in the input's range."""
    h, w = size
    wy = _weights(frames.shape[1], h)
    wx = _weights(frames.shape[2], w)
    x = np.asarray(frames, dtype=np.float32)
    x = np.einsum("yh,thwc->tywc", wy, x, optimize=True)
    return np.einsum("xw,tywc->tyxc", wx, x, optimize=True)  # type: ignore[no-any-return]


def crop(frames: Array, boxes: Array, size: tuple[int, int]) -> Array:
    """Per-frame boxes (T, 4) as x, y, w, h (pixels) -> (T, h, w, C) float32 crops.

    Boxes reaching outside the frame are filled by replicating the edge pixels.
    """
    t_total, fh, fw = frames.shape[:3]
    out = np.empty((t_total, *size, frames.shape[3]), np.float32)
    for t in range(t_total):
        x, y, w, h = (round(float(v)) for v in boxes[t])
        ys = np.clip(np.arange(y, y + max(h, 1)), 0, fh - 1)
        xs = np.clip(np.arange(x, x + max(w, 1)), 0, fw - 1)
        out[t] = resize(frames[t][ys][:, xs][None], size)[0]
    return out


def to_model_input(crops: Array) -> Array:
    """RGB crops (T, h, w, 3), 0..255 -> LipNet-PyTorch's input (1, 3, T, h, w): BGR / 255."""
    bgr = np.asarray(crops, dtype=np.float32)[..., ::-1] / np.float32(255.0)
    return np.ascontiguousarray(bgr.transpose(3, 0, 1, 2)[None])
