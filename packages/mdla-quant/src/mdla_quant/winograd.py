"""Calibration's stride-1 3x3 convolution by Winograd's F(4x4, 3x3): 4 multiplies per output
and input channel where the direct form has 9.

    u = filter_transform(w)                       # once per filter: (36, C, K) float32
    y = conv3x3(x, u, bias, padding)              # x (N,H,W,C) float32 -> (N,OH,OW,K); or None
    y = conv3x3(x, u, bias, padding, relu=True)   # np.maximum(that, 0), in the same pass

The input's and the outputs' transforms are C (`csrc/winograd.c`, which writes out the
matrices); the 36 products between them are numpy's matmul (OpenBLAS's SGEMM). The sum is the
convolution's in exact arithmetic but rounds otherwise than the direct one: outputs differ
from `conv2d`'s by about 1e-6 of their tensor's largest magnitude (tests/quant/test_winograd.py
bounds it on random and on real-model layers). So only calibration, which reads its
activations' ranges and histograms, uses it, and only where it pays: on a ResNet's 56x56x64
layers it ran in about half of oneDNN's direct convolution (`WINOGRAD_MIN_PIXELS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdla_quant.native import library

Array = np.ndarray[Any, Any]

# G of F(4x4, 3x3) (points 0, +-1, +-2, inf): U = G g G^T
G = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ]
)


def filter_transform(w: Array) -> Array:
    """w (K, 3, 3, C) -> U (36, C, K) float32: G g G^T of each filter, in float64 then rounded
    (in C when the library builds: numpy's einsum took 35 ms on a 256x256 layer)."""
    k, _, _, c = w.shape
    lib = library()
    if lib is not None:
        u = np.empty((36, c, k), np.float32)
        lib.mdla_wino43_filter_f32(np.ascontiguousarray(w, np.float32).ctypes, k, c, u.ctypes)
        return u
    full = np.einsum("ai,kijc,bj->abck", G, np.asarray(w, np.float64), G)
    return np.ascontiguousarray(full.reshape(36, c, k), dtype=np.float32)


class Scratch:
    """Each shape's padded-input, transformed-input and product buffers, kept between calls:
    calibration runs a layer once per sample on the same shapes, and allocating them afresh
    (some megabytes) faulted their pages in again on every call. The padded input's border is
    zeroed once; each call with the same input shape and padding writes only its interior."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, ...], tuple[Array, Array, Array]] = {}

    def buffers(
        self, x_shape: Sequence[int], padding: Sequence[int], k: int
    ) -> tuple[Array, Array, Array]:
        """(padded input, its transform, the products) for x_shape (N,H,W,C), `padding`
        (t, b, l, r) and k output channels; the padded input zero outside the interior."""
        n, c = x_shape[0], x_shape[3]
        key = (*x_shape, *padding, k)
        kept = self._kept.get(key)
        if kept is None:
            th, tw = blocks(x_shape, padding)
            tiles = n * th * tw
            kept = (
                np.zeros((n, 4 * th + 2, 4 * tw + 2, c), np.float32),
                np.empty((36, tiles, c), np.float32),
                np.empty((36, tiles, k), np.float32),
            )
            self._kept[key] = kept
        return kept


def blocks(x_shape: Sequence[int], padding: Sequence[int]) -> tuple[int, int]:
    """The 4x4 output blocks down and across (the last ones may hang over the edge)."""
    _, h, w, _ = x_shape
    top, bottom, left, right = padding
    return -(-(h + top + bottom - 2) // 4), -(-(w + left + right - 2) // 4)


def conv3x3(
    x: Array,
    u: Array,
    bias: Array | None,
    padding: Sequence[int],
    scratch: Scratch | None = None,
    relu: bool = False,
) -> Array | None:
    """The stride-1 3x3 convolution of x (N,H,W,C) float32 with the filters `u` transformed
    (`filter_transform`), plus `bias`, zero `padding` (t, b, l, r): (N,OH,OW,K) float32; None
    without the C library (or out of memory in it). `scratch` keeps the working buffers for
    the next call with the same shapes (a given padding: the border it zeroed stays zero).
    `relu`: np.maximum(y, 0) bit for bit (-0 becomes +0, a NaN stays), applied as the output
    transform writes y instead of in one more pass over it."""
    lib = library()
    if lib is None:
        return None
    n, h, w, c = x.shape
    k = u.shape[2]
    top, bottom, left, right = padding
    oh, ow = h + top + bottom - 2, w + left + right - 2
    th, tw = blocks(x.shape, padding)
    hp, wp = 4 * th + 2, 4 * tw + 2
    xp, v, m = (scratch or Scratch()).buffers(x.shape, padding, k)
    xp[:, top : top + h, left : left + w] = x  # in its zero border, to whole blocks
    if lib.mdla_wino43_input_f32(xp.ctypes, n, hp, wp, c, th, tw, v.ctypes) != 0:
        return None
    np.matmul(v, u, out=m)  # (36, blocks, K)
    y = np.empty((n, oh, ow, k), np.float32)
    b = None if bias is None else np.ascontiguousarray(bias, dtype=np.float32)
    if lib.mdla_wino43_output_f32(
        m.ctypes, n, th, tw, k, None if b is None else b.ctypes, oh, ow, y.ctypes, int(relu)
    ):
        return None
    return y
