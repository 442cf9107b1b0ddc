"""Blocked int8 convolutions: float BLAS on the raw codes, then the fused requantization.

CONV_2D and DEPTHWISE_CONV_2D compute acc = bias + sum w * (x - z_in) (`conv.py`,
`depthwise_conv.py`). Here the input is padded with z_in and not offset, so

    acc = r + off,    r = sum w * x  (every tap, padding included),    off = bias - z_in * sum w

(a padded tap adds w * z_in to r and the same to z_in * sum w). r is computed in float, which
is exact whatever the summation order while every partial sum is an integer of magnitude at
most R = 128 * sum|w| (|x| <= 128): float32 when R <= 2^24, else float64 (R < 2^53 since the
taps are fewer than 2^38, see `conv.MAX_TAPS`). Output rows are processed in blocks that keep
the im2col buffer, the BLAS result and the requantization scratch in cache; each block is
requantized by `Requant.apply`. Where `Requant.build` declines (an int32 overflow is possible:
the definition's wrap, saturate or error decides), the caller runs the definition on the
exact int64 accumulator instead (`exact_acc`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_quant.arith import Array
from mdla_quant.kernels.registry import windows
from mdla_quant.kernels.requant import Requant, block_rows

FLOAT32_EXACT = 2**24
MAX_SPLITS = 4  # beyond this many float32 GEMMs per block, one float64 GEMM is cheaper
# BLAS packs the whole (K, O) weight matrix on every call, so a block of a few GEMM rows pays
# that packing again and again (a 7x7 layer with K = 4608 ran in 2-row blocks at a third of
# the GEMM's speed): a block has at least this many rows, or the whole output
MIN_GEMM_ROWS = 256


@dataclass(frozen=True, slots=True)
class Plan:
    """One conv's constants: float weights (channel last), z_in * sum w, the requantizer.

    `splits` cuts the taps into ranges whose float32 partial sums are exact (each range's
    128 * sum|w| <= 2^24); the ranges' results are added in float64 (exact: below 2^53)."""

    weights: Array  # (K, O) for a GEMM, (KH, KW, C) for a depthwise conv; float32 or float64
    zero_term: Array  # (C,) int64: z_in * sum over the taps of w
    requant: Requant | None
    splits: tuple[tuple[int, int], ...]
    tiles: dict[int, Array] = field(default_factory=dict, compare=False, repr=False)


def tap_ranges(abs_w: Array, limit: int) -> tuple[tuple[int, int], ...] | None:
    """Contiguous ranges of the K taps (rows of abs_w (K, C)) in each of which every channel's
    sum of |w| is <= limit; None if more than MAX_SPLITS are needed."""
    cum = np.concatenate([np.zeros((1, abs_w.shape[1]), np.int64), np.cumsum(abs_w, axis=0)])
    k, start, ranges = abs_w.shape[0], 0, []
    while start < k:
        lo, hi = start + 1, k  # the largest end with every channel's range sum <= limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if int((cum[mid] - cum[start]).max()) <= limit:
                lo = mid
            else:
                hi = mid - 1
        if int((cum[lo] - cum[start]).max()) > limit:
            return None  # one tap alone exceeds the limit
        ranges.append((start, lo))
        start = lo
        if len(ranges) > MAX_SPLITS:
            return None
    return tuple(ranges)


def build_plan(
    taps: Array,
    bias: Array | None,
    z_in: int,
    multipliers: tuple[Array, Array],
    rounding: str,
    z_out: int,
    act: tuple[int, int],
    accumulator: str = "saturate",
    splittable: bool = True,
) -> Plan:
    """The plan for int8 weights `taps` (..., C) with the channel on the last axis.

    `splittable`: the taps may be summed in several float32 ranges (a GEMM); a depthwise conv
    sums all its taps in one accumulator, so it gets float32 only where one range holds them."""
    channels = taps.shape[-1]
    wide = taps.reshape(-1, channels).astype(np.int64)
    abs_w = np.abs(wide)
    abs_sum = abs_w.sum(axis=0)
    w_sum = wide.sum(axis=0)
    raw_bound = 128 * abs_sum  # |x| <= 128
    ranges = tap_ranges(abs_w, FLOAT32_EXACT // 128) if wide.shape[0] else ((0, 0),)
    if ranges is not None and len(ranges) > 1 and not splittable:
        ranges = None
    dtype = np.float64 if ranges is None else np.float32
    b = np.zeros(channels, np.int64) if bias is None else bias.astype(np.int64)
    zero_term = z_in * w_sum
    bound = max(z_in + 128, 127 - z_in) * abs_sum + np.abs(b)  # |x - z_in| <= that
    m, s = multipliers
    off = b - zero_term
    requant = Requant.build(m, s, off, bound, raw_bound, rounding, z_out, act, accumulator)
    splits = ((0, wide.shape[0]),) if ranges is None else ranges
    return Plan(np.ascontiguousarray(taps.astype(dtype)), zero_term, requant, splits)


def gemm_conv(plan: Plan, requant: Requant, patches: Array, out: Array) -> None:
    """out (N, OH, OW, O) int8 from patches (N, OH, OW, KH, KW, C), a view of the padded input
    in the filter's tap order, through `requant` (the plan's)."""
    n, oh, ow = patches.shape[:3]
    w = plan.weights.reshape(-1, out.shape[3])
    k, o = w.shape
    rows = gemm_rows(oh, ow, k, o)
    cols = np.empty((rows * ow, k), w.dtype)
    acc = np.empty((rows * ow, o), w.dtype if len(plan.splits) == 1 else np.float64)
    part = np.empty((rows * ow, o), w.dtype) if len(plan.splits) > 1 else acc
    a, v, t = _scratch((rows, ow * o))
    requant = requant.tiled(ow)
    for b in range(n):
        for y0 in range(0, oh, rows):
            y1 = min(oh, y0 + rows)
            nr, r = y1 - y0, (y1 - y0) * ow
            np.copyto(cols[:r].reshape(patches[b, y0:y1].shape), patches[b, y0:y1], "unsafe")
            for i, (k0, k1) in enumerate(plan.splits):
                np.matmul(cols[:r, k0:k1], w[k0:k1], out=part[:r])
                if part is acc:
                    continue
                if i == 0:
                    np.copyto(acc[:r], part[:r])
                else:
                    np.add(acc[:r], part[:r], out=acc[:r])
            flat = (nr, ow * o)
            scratch = (a[:nr], v[:nr], t[:nr])
            requant.apply(acc[:r].reshape(flat), out[b, y0:y1].reshape(flat), scratch)


def gemm_rows(oh: int, ow: int, k: int, o: int) -> int:
    """Output rows per GEMM block: about 2^16 values of the larger of the im2col and the
    result rows, but at least MIN_GEMM_ROWS GEMM rows (pixels), or all `oh` rows."""
    return max(block_rows(ow, max(k, o)), min(oh, -(-MIN_GEMM_ROWS // ow)))


def _scratch(shape: tuple[int, int]) -> tuple[Array, Array, Array]:
    """The requantization's buffers: int64, int32, int32."""
    return np.empty(shape, np.int64), np.empty(shape, np.int32), np.empty(shape, np.int32)


# a depthwise conv of at most this many channels sums along whole output rows (numpy's inner
# loop over OW * C values); wider ones per pixel, where the inner loop over C is already long
# and the OW-fold tiled filter costs more than it saves (measured crossover: 144-200 channels)
ROW_MAX_CHANNELS = 160


def depthwise(
    plan: Plan,
    requant: Requant,
    xp: Array,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    out: Array,
) -> None:
    """out (N, OH, OW, C) int8 from the padded input xp (N, HP, WP, C) int8, channel c of
    the filter (KH, KW, C) over channel c of xp, through `requant` (the plan's): by
    `depthwise_rows` up to ROW_MAX_CHANNELS channels, else by `depthwise_pixels`.

    Both sum the taps in float in numpy's order, and any order gives the same value: every
    partial sum is an integer of magnitude at most 128 * sum|w_c|, which the plan keeps within
    2^24 for float32 (one tap range, `build_plan`) and below 2^53 for float64, so no addition
    rounds."""
    form = depthwise_rows if out.shape[3] <= ROW_MAX_CHANNELS else depthwise_pixels
    form(plan, requant, xp, stride, dilation, out)


def depthwise_pixels(
    plan: Plan,
    requant: Requant,
    xp: Array,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    out: Array,
) -> None:
    """`depthwise` as one `np.einsum` per block of output rows over the windows' view,
    sum_{i,j} x[y, x, c, i, j] * w[i, j, c]. (One einsum pass reads each tap once; a
    multiply and an add per tap over whole rows cost twice as much.)"""
    kh, kw, c = plan.weights.shape
    n, oh, ow, _ = out.shape
    dtype = plan.weights.dtype
    taps = windows(np.asarray(xp, dtype), (kh, kw), stride, dilation)  # (N, OH, OW, C, KH, KW)
    rows = block_rows(ow, c)
    acc = np.empty((rows, ow, c), dtype)
    a, v, t = _scratch((rows, ow * c))
    requant = requant.tiled(ow)
    for b in range(n):
        for y0 in range(0, oh, rows):
            nr = min(oh, y0 + rows) - y0
            np.einsum("hwcij,ijc->hwc", taps[b, y0 : y0 + nr], plan.weights, out=acc[:nr])
            dest = out[b, y0 : y0 + nr].reshape(nr, ow * c)
            requant.apply(acc[:nr].reshape(nr, ow * c), dest, (a[:nr], v[:nr], t[:nr]))


def depthwise_rows(
    plan: Plan,
    requant: Requant,
    xp: Array,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    out: Array,
) -> None:
    """`depthwise` as a few `np.einsum` calls per block of output rows, over views whose
    inner axis runs along a whole output row, p = x * C + c (a stride of one element),
    against the filter tiled OW times along that axis (`tiled_taps`): numpy's inner loop then
    covers OW * C values instead of C. Such a view exists where the taps of one filter column read
    input columns x * sw + j * dw that step by one pixel when x does: true of each column
    phase q of the input, the columns q, q + sw, q + 2 sw, ... (`column_groups`); the
    groups' sums are added (exact, as every partial sum: see `depthwise`)."""
    kh, kw, c = plan.weights.shape
    n, oh, ow, _ = out.shape
    dtype = plan.weights.dtype
    groups = column_groups(kw, stride[1], dilation[1])
    wide = tiled_taps(plan, ow)
    rows = block_rows(ow, c)
    acc = np.empty((rows, ow * c), dtype)
    part = np.empty((rows, ow * c), dtype) if len(groups) > 1 else acc
    a, v, t = _scratch((rows, ow * c))
    requant = requant.tiled(ow)
    for b in range(n):
        views = [
            (row_view(xp[b], dtype, g, (kh, ow), stride, dilation), wide[:, g.first :: g.step])
            for g in groups
        ]
        for y0 in range(0, oh, rows):
            nr = min(oh, y0 + rows) - y0
            for i, (view, w) in enumerate(views):
                dest = acc[:nr] if i == 0 else part[:nr]
                np.einsum("hpij,ijp->hp", view[y0 : y0 + nr], w, out=dest)
                if i > 0:
                    np.add(acc[:nr], dest, out=acc[:nr])
            block = out[b, y0 : y0 + nr].reshape(nr, ow * c)
            requant.apply(acc[:nr], block, (a[:nr], v[:nr], t[:nr]))


@dataclass(frozen=True, slots=True)
class ColumnGroup:
    """The filter columns j = first, first + step, ... (`count` of them) that read column
    phase `phase` of the input, at phase column x + offset + k * shift for the k-th one."""

    phase: int
    first: int
    step: int
    count: int
    offset: int
    shift: int


def column_groups(kw: int, sw: int, dw: int) -> list[ColumnGroup]:
    """The filter columns grouped by the input column phase they read.

    Column j reads input column x * sw + j * dw = q + sw * (x + o_j) with q = j * dw mod sw
    and o_j = j * dw div sw. With g = gcd(sw, dw) the columns of one phase are j0, j0 + sw/g,
    j0 + 2 sw/g, ... (j * dw mod sw repeats with period sw/g), and o steps by dw/g along
    them: (j + sw/g) * dw = j * dw + sw * (dw/g)."""
    g = math.gcd(sw, dw)
    groups = []
    for j0 in range(min(kw, sw // g)):
        count = len(range(j0, kw, sw // g))
        o, q = divmod(j0 * dw, sw)
        groups.append(ColumnGroup(q, j0, sw // g, count, o, dw // g))
    return groups


def row_view(
    x: Array,
    dtype: np.dtype[Any],
    g: ColumnGroup,
    size: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
) -> Array:
    """(OH, OW * C, KH, count) view of phase g.phase of one padded image x (HP, WP, C),
    converted to `dtype`: [y, x * C + c, i, k] = x[y * sh + i * dh, (x + g.offset + k *
    g.shift) * sw + g.phase, c]. A contiguous phase copy makes x * C + c one stride."""
    kh, ow = size
    phase = np.ascontiguousarray(x[:, g.phase :: stride[1]], dtype)
    hp, wq, c = phase.shape
    oh = (hp - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    if g.offset + (g.count - 1) * g.shift + ow > wq or oh < 1:
        raise ValueError(f"a {kh}-row filter does not fit the padded input {x.shape}")
    s_h, s_w, s_c = phase.strides
    return np.lib.stride_tricks.as_strided(
        phase[:, g.offset :],
        (oh, ow * c, kh, g.count),
        (s_h * stride[0], s_c, s_h * dilation[0], s_w * g.shift),
        writeable=False,
    )


def tiled_taps(plan: Plan, ow: int) -> Array:
    """The plan's depthwise filter (KH, KW, C) tiled to (KH, KW, OW * C): [i, j, x * C + c] =
    w[i, j, c] (cached on the plan per OW)."""
    done = plan.tiles.get(ow)
    if done is None:
        done = np.ascontiguousarray(np.tile(plan.weights, (1, 1, ow)))
        plan.tiles[ow] = done
    return done
