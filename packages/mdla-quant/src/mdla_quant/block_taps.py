"""Block reconstruction's depthwise conv on sampled positions, and its two gradients, read
straight from the pixel rows its taps read (`block_reconstruction.BlockPatches`).

A step samples M depthwise output positions; each reads T = kh*kw taps, and all of them read
P distinct pixels of the depthwise input (P rows `z`; `tap` (M, T) is each tap's row). On the
late 7x7 maps M*T = 6400 taps read a few hundred pixels, so nothing here builds the (M, T, C)
array of every tap's value: each kernel goes one tap offset t at a time over (M, C) slices,
which stay in the core's cache:

    depthwise       a[m, c]  = sum_t z[tap[m, t], c] * w[t, c]
    depthwise_grad  gw[t, c] = sum_m z[tap[m, t], c] * dd[m, c]
    pixel_grad      g[p, c]  = sum_{(m, t): tap[m, t] = p} dd[m, c] * w[t, c]

`pixel_grad` is the expand's gradient summed per pixel before the expand's GEMM: the GEMM then
runs over P pixel rows instead of M*T tap rows, the same sum regrouped (so other bits).

Order and threads: every sum runs over t (or m) in index order, per channel, and the
channels are cut over the threads (`soft_rounding.by_rows`): no cut changes a bit. On float32
(the fit's case) each kernel is one pass of C (`csrc/block_taps.c`, the same operations in the
same order, so the same bits; ctypes lets go of the GIL, so the threads' parts run at once);
numpy's per-tap passes otherwise, or without a C compiler.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_quant.native import library
from mdla_quant.soft_rounding import by_rows

Array = np.ndarray[Any, Any]
NATIVE = True  # False: numpy's passes even on float32 (tests compare the two)


def _native(*arrays: Array) -> Any | None:
    """The C library when every array is C-contiguous float32, else None."""
    if not NATIVE or any(a.dtype != np.float32 or not a.flags.c_contiguous for a in arrays):
        return None
    return library()


def depthwise(z: Array, tap: Array, w: Array, out: Array) -> Array:
    """out[m, c] = sum_t z[tap[m, t], c] * w[t, c], t in order (written into `out`, (M, C))."""
    w, tap = np.ascontiguousarray(w), np.ascontiguousarray(tap, np.int64)
    z = z.astype(out.dtype, copy=False)  # np.take writes only its own dtype
    lib: Any = _native(z, w, out)

    def native(r: slice) -> None:
        m, t = tap.shape
        args = (z.ctypes.data, tap.ctypes.data, m, t, w.ctypes.data, out.shape[1])
        lib.mdla_block_dw_f32(*args, r.start, r.stop, out.ctypes.data)

    def work(r: slice) -> None:
        part, term = out[:, r], np.empty(out[:, r].shape, out.dtype)
        np.take(z[:, r], tap[:, 0], axis=0, out=part, mode="clip")
        part *= w[0, r]
        for t in range(1, tap.shape[1]):
            np.take(z[:, r], tap[:, t], axis=0, out=term, mode="clip")
            term *= w[t, r]
            part += term

    by_rows(work if lib is None else native, out.shape[1], tap.size * out.shape[1])
    return out


def depthwise_grad(z: Array, tap: Array, dd: Array) -> Array:
    """gw[t, c] = sum_m z[tap[m, t], c] * dd[m, c] (T, C): the depthwise weights' gradient."""
    out = np.empty((tap.shape[1], dd.shape[1]), np.result_type(z, dd))
    tap, z = np.ascontiguousarray(tap, np.int64), z.astype(out.dtype, copy=False)
    lib: Any = _native(z, dd)

    def native(r: slice) -> None:
        m, t = tap.shape
        args = (z.ctypes.data, tap.ctypes.data, m, t, dd.ctypes.data, dd.shape[1])
        lib.mdla_block_dw_grad_f32(*args, r.start, r.stop, out.ctypes.data)

    def work(r: slice) -> None:
        term = np.empty(dd[:, r].shape, out.dtype)
        for t in range(tap.shape[1]):
            np.take(z[:, r], tap[:, t], axis=0, out=term, mode="clip")
            term *= dd[:, r]
            np.sum(term, axis=0, out=out[t, r])

    by_rows(work if lib is None else native, dd.shape[1], tap.size * dd.shape[1])
    return out


def pixel_grad(
    tap: Array,
    idx: Array,
    dd: Array,
    w: Array,
    pixels: int,
    mask: Array | None = None,
    out: Array | None = None,
) -> Array:
    """g[p, c] = sum over the taps (m, t) reading pixel p of dd[m, c] * w[t, c] ((P, C)),
    times mask[p, c] (a bool (P, C), the expand's derivative) when given; written into `out`
    ((P, C), reused from step to step) when given.

    The same position may be sampled twice (`idx`, drawn with replacement): its rows of `dd`
    are summed first, so that at one offset t every position reads a different pixel (the
    padding's row, 0 when there is padding, aside: it is garbage here and the caller's
    derivative zeroes it) and each offset's terms are added to their rows in one pass. The
    zeroing and the mask go with the sums, each thread on its channels."""
    _, first, back = np.unique(idx, return_index=True, return_inverse=True)
    d = dd[first]
    again = np.flatnonzero(first[back] != np.arange(len(idx)))
    np.add.at(d, back[again], dd[again])
    rows, w = np.ascontiguousarray(tap[first], np.int64), np.ascontiguousarray(w)
    dtype = np.result_type(dd, w)
    g = out if out is not None else np.empty((pixels, dd.shape[1]), dtype)
    bits = mask is not None and mask.dtype == np.bool_ and mask.flags.c_contiguous
    lib: Any = _native(d, w, g) if g.dtype == dtype and (mask is None or bits) else None

    def native(r: slice) -> None:
        u, t = rows.shape
        args = (rows.ctypes.data, u, t, d.ctypes.data, w.ctypes.data, g.shape[1])
        at = None if mask is None else mask.ctypes.data
        lib.mdla_block_pixel_grad_f32(*args, r.start, r.stop, g.ctypes.data, pixels, at)

    def work(r: slice) -> None:
        g[:, r] = 0
        term, acc = (np.empty(d[:, r].shape, g.dtype) for _ in range(2))
        for t in range(rows.shape[1]):
            np.multiply(d[:, r], w[t, r], out=term)
            np.take(g[:, r], rows[:, t], axis=0, out=acc, mode="clip")
            acc += term
            g[rows[:, t], r] = acc
        if mask is not None:
            g[:, r] *= mask[:, r]

    by_rows(work if lib is None else native, dd.shape[1], rows.size * dd.shape[1])
    return g


def fused_quant_c(
    y: Array, lo: float, hi: float, grid: tuple[float, int] | None, out: Array, deriv: Array
) -> bool:
    """`block_reconstruction.fused_quant`'s value and derivative written in one pass of C (its
    numpy operations on float32, in its order: the same bits), the elements cut over the
    threads; False, with nothing written, unless y, out and deriv (float32 or bool) are
    C-contiguous float32 arrays of one size."""
    lib: Any = _native(y, out)
    sizes = {y.size, out.size, deriv.size}
    if lib is None or len(sizes) > 1 or not deriv.flags.c_contiguous:
        return False
    if deriv.dtype not in (np.float32, np.bool_):
        return False
    s, z = grid if grid is not None else (1.0, 0)
    bits = deriv.dtype == np.bool_

    def work(r: slice) -> None:
        at = deriv.ctypes.data + r.start * deriv.itemsize
        args = (y.ctypes.data + 4 * r.start, r.stop - r.start, lo, hi, grid is not None, s, z)
        lib.mdla_block_fused_quant_f32(
            *args, out.ctypes.data + 4 * r.start, at if bits else None, None if bits else at
        )

    by_rows(work, y.size, y.size)
    return True
