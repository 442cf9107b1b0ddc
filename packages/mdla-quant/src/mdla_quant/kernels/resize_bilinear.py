"""RESIZE_BILINEAR, int8 NHWC (TFLite reference_ops::ResizeBilinearInteger).

Scales in Q10:  sc = ((2^10 * in + out/2) / out)  or, align_corners and out > 1,
                sc = ((2^10 * (in-1) + (out-1)/2) / (out-1))
Source row:     p = y * sc  (+ sc/2 - 2^9 with half_pixel_centers)
                y0 = max(trunc(p / 2^10), 0),  y1 = min(trunc((p + 2^10 - 1) / 2^10), in - 1)
                dy = p - 2^10 * y0 (the Q10 fraction), likewise for columns.
Sum (Q20):      v = x[y0,x0](2^10-dy)(2^10-dx) + x[y1,x0] dy (2^10-dx)
                  + x[y0,x1](2^10-dy) dx + x[y1,x1] dy dx
double:         out = trunc((v +- 2^19) / 2^20)    (ties away from zero)
single:         out = (v + 2^19) >> 20              (ties toward +inf)
Input and output share scale and zero point.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import ResizeAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import INT8, Width, fail, kernel

BLOCK = 1 << 15  # output values per block of rows


def _trunc_div(a: Array, d: int) -> Array:
    """C integer division (truncation toward zero)."""
    return np.asarray(np.sign(a) * (np.abs(a) // d))


def _axis(n_in: int, n_out: int, align: bool, half: bool) -> tuple[Array, Array, Array]:
    """(lower index, upper index, Q10 fraction) of every output coordinate on one axis."""
    if align and n_out > 1:
        sc = (2**10 * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1)
    else:
        sc = (2**10 * n_in + n_out // 2) // n_out
    p = np.arange(n_out, dtype=np.int64) * sc
    if half:
        p = p + sc // 2 - 2**9
    lo = np.maximum(_trunc_div(p, 2**10), 0)
    hi = np.minimum(_trunc_div(p + 2**10 - 1, 2**10), n_in - 1)
    return lo, hi, p - 2**10 * lo


def resize_operands(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    width: Width = INT8,
) -> tuple[Array, tuple[int, int], bool, bool]:
    """What every resize checks and reads: the NHWC input of `width` (its params equal the
    output's), the output size and the align_corners / half_pixel_centers flags (at most one)."""
    x = width.arg(op, args, 0)
    width.same(op, arg_q[0], out_q, "input")
    if x.ndim != 4:
        raise fail(op, f"input must be NHWC, got shape {x.shape}")
    a = ResizeAttrs.of(op)
    (oh, ow), align, half = a.size, a.align_corners, a.half_pixel_centers
    if (align and half) or min(oh, ow) < 1:
        raise fail(
            op,
            f"size {(oh, ow)}, align_corners={align}, half_pixel_centers={half}: "
            "need size >= 1 and at most one of the two flags",
        )
    return x, (oh, ow), align, half


def bilinear(
    x: Array,
    size: tuple[int, int],
    align: bool,
    half: bool,
    rounding: str,
    wide: type,
    narrow: type | None = None,
) -> Array:
    """The header's sum and rounding of NHWC codes `x` in integers of type `wide`: int32 for
    int8 codes, int64 for int16 (|v| <= 2^35, LiteRT's int64 sum). With `narrow` (int8), the
    result is clamped to that type's range and returned in it (`saturate`).

    Output rows are computed in blocks of about BLOCK values, each block's passes in place on
    a buffer that stays in cache; every element gets the same integer operations."""
    y0, y1, dy = _axis(x.shape[1], size[0], align, half)
    x0, x1, dx = _axis(x.shape[2], size[1], align, half)
    # The sum computed separably (exact integer algebra, same value):
    #   h[r, j] = x[r, x0](2^10 - dx) + x[r, x1] dx          |h| <= 2^(bits - 1) * 2^10
    #   v       = h[y0, j](2^10 - dy) + h[y1, j] dy           |v| <= 2^(bits - 1) * 2^20
    # so `wide` is exact throughout; only the input rows some output reads are interpolated.
    rows = np.unique(np.concatenate([y0, y1]))
    at = np.searchsorted(rows, np.stack([y0, y1]))
    xr: Array = x[:, rows].astype(wide)
    fx: Array = dx.astype(wide)[None, None, :, None]
    h = xr[:, :, x0] * (2**10 - fx) + xr[:, :, x1] * fx
    fy: Array = dy.astype(wide)[None, :, None, None]
    n, _, ow, c = h.shape
    out = np.empty((n, size[0], ow, c), wide if narrow is None else narrow)
    step = max(1, BLOCK // max(1, n * ow * c))
    for r0 in range(0, size[0], step):
        r = slice(r0, r0 + step)
        q20 = h[:, at[0, r]] * (2**10 - fy[:, r])
        part = h[:, at[1, r]]
        np.multiply(part, fy[:, r], out=part)
        np.add(q20, part, out=q20)
        _round(q20, rounding, wide)
        if narrow is None:
            out[:, r] = q20
        else:
            info = np.iinfo(narrow)
            np.clip(q20, info.min, info.max, out=out[:, r], casting="unsafe")
    return out


def _round(q20: Array, rounding: str, wide: type) -> None:
    """In place: trunc((v +- 2^19) / 2^20) (double), (v + 2^19) >> 20 (single)."""
    if rounding != "single":  # trunc((v +- 2^19) / 2^20) = (v + 2^19 - [v < 0]) >> 20
        sign_bits = 8 * np.dtype(wide).itemsize - 1
        np.add(q20, np.right_shift(q20, sign_bits), out=q20)  # (ties away from zero)
    np.add(q20, 2**19, out=q20)
    np.right_shift(q20, 20, out=q20)


@kernel(OpKind.RESIZE_BILINEAR)
def resize_bilinear(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, size, align, half = resize_operands(op, args, arg_q, out_q)
    return bilinear(x, size, align, half, rounding, np.int32, np.int8)
