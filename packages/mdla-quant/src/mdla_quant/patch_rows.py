"""AdaRound's rows of patches (`adaround._Layer`): each row an output position, its patch the
layer's input at that position's taps.

    patches(rows, xs, window, value)   the rows' patches, gathered once (convs, FC rows)
    TapMap(rows, xs, window, value)     a depthwise layer's: each step gathers its rows' taps
                                        from the zero-padded maps (`take`)

A depthwise layer's patches hold KH*KW values per row (275 MB per network for lite0's
14x14x672 5x5 layer at 4096 rows, where its 16 padded maps hold 14 MB): a depthwise layer
gathers per step from its maps when they are the smaller (`maps_are_smaller`). Either way a
row's values are the same float32 values, the padding +0.0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mdla_ir import Tensor
from mdla_ir.attrs import ConvAttrs
from mdla_ir.shapes import window_out
from mdla_quant.native import library
from mdla_quant.sequential import dequantize
from mdla_quant.soft_rounding import by_rows

Array = np.ndarray[Any, Any]
Window = tuple[ConvAttrs, int, int]  # a conv's attrs, kh, kw


def patches(
    rows: Array,
    xs: list[Array],
    window: tuple[ConvAttrs, int, int] | None,
    value: Callable[[Array], Array],
) -> Array:
    """The rows `rows` (sorted, global over the samples `xs` in turn) of an op's patches, as
    float32 `value`s: with `window` (the conv's attrs, kh, kw) a row is an output position
    (n, oy, ox) and its patch (KH, KW, C) the input at its taps, 0 in the padding; without
    one a row is a row of x read as (-1, C). Each tap is one contiguous run of C values
    gathered from x, and `value` (the dequantization) runs on the gathered taps only: the
    same values, element by element, as gathering from the whole padded, dequantized maps."""
    out, start = [], 0
    for x in xs:
        if window is None:
            flat = x.reshape(-1, x.shape[-1])
            count = flat.shape[0]
        else:
            a, kh, kw = window
            (sh, sw), (dh, dw), (pt, pb, pl, pr) = a.stride, a.dilation, a.padding
            oh, ow = (
                window_out(x.shape[1], kh, sh, dh, pt, pb),
                window_out(x.shape[2], kw, sw, dw, pl, pr),
            )
            count = x.shape[0] * oh * ow
        mine = rows[(rows >= start) & (rows < start + count)] - start
        start += count
        if not len(mine):
            continue
        if window is None:
            out.append(np.asarray(value(flat[mine]), np.float32))
            continue
        n, rem = np.divmod(mine, oh * ow)
        iy = (rem // ow)[:, None] * sh - pt + np.arange(kh)[None] * dh  # (m, kh)
        ix = (rem % ow)[:, None] * sw - pl + np.arange(kw)[None] * dw  # (m, kw)
        inside = ((iy >= 0) & (iy < x.shape[1]))[:, :, None] & ((ix >= 0) & (ix < x.shape[2]))[
            :, None
        ]
        iy, ix = np.clip(iy, 0, x.shape[1] - 1), np.clip(ix, 0, x.shape[2] - 1)
        x = np.ascontiguousarray(x)  # each tap one run of C values (a map may be a view)
        patch = np.asarray(value(x[n[:, None, None], iy[:, :, None], ix[:, None]]), np.float32)
        patch[~inside] = 0.0
        out.append(patch)
    return np.concatenate(out)


def reals(t: Tensor, raw: list[Array]) -> tuple[list[Array], Callable[[Array], Array]]:
    """The int8 values `raw` of `t` and the map of gathered ones to reals: per-tensor
    parameters dequantize only the taps gathered (`patches`), per-channel ones the whole maps
    (their channel axis is that of the map, not of a patch)."""
    if t.quant is not None and t.quant.channel_dim is None:
        return raw, lambda q: dequantize(t, q)
    return [dequantize(t, r) for r in raw], lambda x: x


def maps_are_smaller(rows: Array, xs: list[Array], window: Window) -> bool:
    """Whether the padded maps of `xs` hold fewer positions than the rows' patches hold taps."""
    a, kh, kw = window
    (pt, pb, pl, pr) = a.padding
    positions = sum(x.shape[0] * (x.shape[1] + pt + pb) * (x.shape[2] + pl + pr) for x in xs)
    return bool(positions < len(rows) * kh * kw)


class TapMap:
    """The rows `rows` (sorted, global over the samples `xs` in turn) of a depthwise layer with
    `window`, as one flat map of the padded samples (positions, C * mult) and each row's taps
    as indices into it: `take(idx)` is `patches(rows, xs, window, value)[idx]` (its channels
    repeated `mult` times), reshaped (len(idx), KH*KW, C * mult), bit for bit."""

    def __init__(
        self,
        rows: Array,
        xs: list[Array],
        window: Window,
        value: Callable[[Array], Array],
        mult: int = 1,
    ) -> None:
        a, kh, kw = window
        (sh, sw), (dh, dw), (pt, pb, pl, pr) = a.stride, a.dilation, a.padding
        maps, index, start, offset = [], [], 0, 0
        for x in xs:
            n, h, w, c = x.shape
            oh, ow = window_out(h, kh, sh, dh, pt, pb), window_out(w, kw, sw, dw, pl, pr)
            mine = rows[(rows >= start) & (rows < start + n * oh * ow)] - start
            start += n * oh * ow
            hp, wp = h + pt + pb, w + pl + pr
            padded = np.zeros((n, hp, wp, c), np.float32)
            padded[:, pt : pt + h, pl : pl + w] = np.asarray(value(x), np.float32)
            maps.append(padded.reshape(-1, c))
            b, rem = np.divmod(mine, oh * ow)
            base = offset + (b * hp + rem // ow * sh) * wp + rem % ow * sw
            taps = (np.arange(kh)[:, None] * dh * wp + np.arange(kw)[None] * dw).ravel()
            index.append(base[:, None] + taps[None])
            offset += n * hp * wp
        flat = np.concatenate(maps)
        self.flat = np.ascontiguousarray(np.repeat(flat, mult, axis=1) if mult > 1 else flat)
        self.index = np.ascontiguousarray(np.concatenate(index), np.int64)  # (rows, KH*KW)
        self.rows = len(self.index)

    def take(self, idx: Array, out: Array | None = None) -> Array:
        """The taps of the rows `idx` (len(idx), KH*KW, C * mult), into `out` when given."""
        shape = (len(idx), self.index.shape[1], self.flat.shape[1])
        if out is None or out.shape != shape:
            out = np.empty(shape, np.float32)
        return np.take(self.flat, self.index[idx], axis=0, out=out, mode="clip")

    def direct(self, *operands: Array) -> bool:
        """Whether `forward` and `grad` can run from the maps in C on these operands (the
        library built, every operand float32 (M or K, C * mult), as einsum would keep them)."""
        c = self.flat.shape[1]
        shapes_ok = all(a.dtype == np.float32 and a.ndim == 2 and a.shape[1] == c for a in operands)
        return library() is not None and shapes_ok

    def forward(self, w: Array, rows: Array) -> Array:
        """einsum("mko,ko->mo", self.take(rows), w) from the maps, not gathered (csrc/taps.c),
        its columns cut over the threads; `direct(w)` must hold."""
        return self._run("mdla_taps_forward_f32", w, rows, (len(rows), self.flat.shape[1]))

    def grad(self, dy: Array, rows: Array) -> Array:
        """einsum("mko,mo->ko", self.take(rows), dy) likewise; `direct(dy)` must hold."""
        return self._run("mdla_taps_grad_f32", dy, rows, (self.index.shape[1], self.flat.shape[1]))

    def _run(self, name: str, b: Array, rows: Array, shape: tuple[int, int]) -> Array:
        fn, c, k = getattr(library(), name), self.flat.shape[1], self.index.shape[1]
        b, rows = np.ascontiguousarray(b), np.ascontiguousarray(rows, np.int64)
        out = np.empty(shape, np.float32)
        at = (self.flat.ctypes.data, self.index.ctypes.data, rows.ctypes.data, b.ctypes.data)

        def part(r: slice) -> None:
            fn(at[0], c, at[1], k, at[2], len(rows), at[3], r.start, r.stop, out.ctypes.data)

        by_rows(part, c, len(rows) * k * c)  # cut by columns: each output the same sum
        return out
