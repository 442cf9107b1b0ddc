"""Frame resizing and cropping in numpy (no OpenCV/PIL needed on a phone).

`resize` is separable linear interpolation whose triangle filter is widened by the scale
factor when shrinking (antialiased, as PIL's BILINEAR does): each output pixel is a weighted
mean of the source pixels within one output pixel of its centre; same size is the identity.
`write_png` is a minimal PNG encoder (8-bit RGB, one IDAT), so `--save-crops` needs no imaging
library.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from mdla_runtime.atomic import write_atomic

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


def _chunk(kind: bytes, data: bytes) -> bytes:
    """A PNG chunk: length, type, data, CRC-32 of type + data (all big-endian)."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_png(path: str | Path, rgb: Array) -> None:
    """(H, W, 3) uint8 RGB -> an 8-bit truecolour PNG (each row filter type 0, none)."""
    h, w = rgb.shape[:2]
    rows = np.concatenate([np.zeros((h, 1), np.uint8), rgb.reshape(h, w * 3)], axis=1)
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # depth 8, colour type 2 (RGB)
    body = zlib.compress(np.ascontiguousarray(rows, dtype=np.uint8).tobytes(), 6)
    png = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", body)
    write_atomic(path, png + _chunk(b"IEND", b""))


def from_model_input(x: Array) -> Array:
    """The inverse of `to_model_input`: (1, 3, T, h, w) BGR / 255 -> (T, h, w, 3) uint8 RGB."""
    rgb = np.asarray(x[0], dtype=np.float32).transpose(1, 2, 3, 0)[..., ::-1] * 255.0
    return np.clip(np.round(rgb), 0, 255).astype(np.uint8)


def save_crops(x: Array, folder: Path, per_row: int = 15) -> list[Path]:
    """What the model read, as PNGs: frame_NNNN.png per frame and strip.png (all frames in
    rows of `per_row`, in order, black after the last), at the model's input size."""
    crops = from_model_input(x)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for t, frame in enumerate(crops):
        paths.append(folder / f"frame_{t:04d}.png")
        write_png(paths[-1], frame)
    n, h, w = crops.shape[:3]
    rows = -(-n // per_row)
    cols = min(n, per_row)
    sheet = np.zeros((rows * cols, h, w, 3), np.uint8)
    sheet[:n] = crops
    strip = sheet.reshape(rows, cols, h, w, 3).transpose(0, 2, 1, 3, 4)
    strip = strip.reshape(rows * h, cols * w, 3)
    paths.append(folder / "strip.png")
    write_png(paths[-1], strip)
    return paths
