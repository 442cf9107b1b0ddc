"""Streaming activation statistics and the four ways to turn them into a clipping range.

`Histogram` keeps the exact running min/max and a histogram over a symmetric range [-R, R]
whose R only ever doubles (the old bins then merge pairwise into the middle half), so any
number of calibration batches streams through in constant memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mdla_quant.binning import c_bin_counts, c_observe
from mdla_quant.native import library

Array = np.ndarray[Any, Any]


F32_MAX = float(np.finfo(np.float32).max)


def _first_radius(need: float) -> float:
    """A histogram's radius on its first values: the power of two at or above their largest
    magnitude (1 for all zeros)."""
    return float(2.0 ** np.ceil(np.log2(need))) if need > 0 else 1.0


@dataclass(frozen=True)
class _Update:
    """One `Histogram.update`'s own contribution, as `Histogram.update_padded` reads it."""

    counts: Array  # int64, bins (float32 binning of the update's values)
    zeros: int
    lo: float
    hi: float
    radius: float  # the radius they were binned at
    size: int
    finite: bool


class Histogram:
    use_c = True  # bin through the C kernel when it builds (False: numpy's form; same counts)

    def __init__(self, bins: int = 2048, keep_last: bool = False) -> None:
        self.bins = bins
        self.counts = np.zeros(bins, dtype=np.float64)
        self.radius = 0.0
        self.lo, self.hi = np.inf, -np.inf
        self.zeros = 0  # exact zeros (a ReLU's), also counted in the bins
        self.updates = 0  # calls of update (or update_padded)
        self.keep_last = keep_last  # keep the last update's own counts (`update_padded` reads)
        self.last: _Update | None = None

    def update(self, x: Array) -> None:
        x = np.asarray(x, dtype=np.float32).ravel()
        self.updates += 1
        self.last = None
        if x.size == 0:
            return
        if self._update_in_one_pass(x):
            return
        lo, hi = float(x.min()), float(x.max())
        self._reach(max(abs(lo), abs(hi)))
        finite = bool(np.isfinite(lo) and np.isfinite(hi))
        counts, zeros = self._bin_counts(x, finite)
        self._record(counts, zeros, lo, hi, x.size, finite)

    def _record(
        self, counts: Array, zeros: int, lo: float, hi: float, size: int, finite: bool
    ) -> None:
        """Add one update's counts, zeros and range (binned at the current radius); kept as
        `last` when `keep_last`."""
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        self.counts += counts
        self.zeros += zeros
        if self.keep_last:
            self.last = _Update(counts, zeros, lo, hi, self.radius, size, finite)

    def _update_in_one_pass(self, x: Array) -> bool:
        """The rest of `update(x)` from one C pass (`binning.c_observe`) that bins x at the
        radius it already has and finds its min and max: the same counts, range and zeros
        when x is finite and within that radius (then the radius does not grow), which is
        every update after a histogram's first but the few that widen it. False, with
        nothing changed, when it does not apply (then `update` reads x as before)."""
        scale = self._scale(self.radius) if self.radius else np.inf
        if not self.use_c or scale > F32_MAX:
            return False
        seen = c_observe(x, self.radius, scale, self.bins)
        if seen is None:
            return False
        counts, zeros, lo, hi = seen
        self._record(self._fold_top(counts), zeros, lo, hi, x.size, True)
        return True

    def update_padded(self, source: Histogram, size: int) -> bool:
        """`update(x)` for x (`size` values) = the values `source` was last updated with plus
        exact zeros (a zero PAD's output), from source's kept counts of that update instead of
        binning them again: the padded values' bins are the source's plus the zeros', in the
        zeros' bin; their min and max reach 0; their radius is the source's, since a zero
        does not raise max(|min|, |max|). So the counts, range, radius and zero count are
        update(x)'s exactly. False, with nothing changed, when it does not apply: the source
        kept no counts of its update just before this one's (`keep_last`, each histogram
        updated once per sample), or binned them on the non-finite or tiny-radius path."""
        last = source.last
        if last is None or source.updates != self.updates + 1 or not last.finite:
            return False
        border = size - last.size
        lo, hi = (min(last.lo, 0.0), max(last.hi, 0.0)) if border > 0 else (last.lo, last.hi)
        need = max(abs(lo), abs(hi))
        radius = self.radius or _first_radius(need)
        while need > radius:
            radius *= 2.0
        if border < 0 or radius != last.radius or self._scale(radius) > F32_MAX:
            return False
        self.updates += 1
        self.last = None
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        self._reach(need)
        self.counts += last.counts
        if border > 0:
            zero_bin, _ = self._bin_counts(np.zeros(1, dtype=np.float32), True)
            self.counts += border * zero_bin
        self.zeros += last.zeros + border
        return True

    def _reach(self, need: float) -> None:
        """The radius set on the first values, doubled (bins merging) until it holds `need`."""
        if self.radius == 0.0:
            self.radius = _first_radius(need)
        while need > self.radius:
            self._grow()

    def _scale(self, radius: float) -> float:
        return self.bins / (2 * radius)

    def _bin_counts(self, x: Array, finite: bool) -> tuple[Array, int]:
        """Counts of bin(x) = clip(int((x + R) * (bins / 2R)), 0, bins - 1), in float32, and
        the number of exact zeros in x (either sign).

        Fast form when x is finite (its min and max are: NaN propagates through both): then
        -R <= x <= R, so x + R >= 0 (rounding keeps an exact non-negative value non-negative)
        and only bin = bins (x at R) needs the clip, which folding count[bins] into the last
        bin does. The float32 operations and their order are the definition's (R and bins / 2R
        are powers of two, exactly as the definition's scalars become float32), so the bins
        are the same; the product is computed in place to save a pass. The C kernel
        (`binning.c_bin_counts`) does the same float32 operations in one pass, when built,
        and counts the zeros in it."""
        scale = self._scale(self.radius)
        if not finite or scale > F32_MAX:  # (R < 2^-118: as defined)
            idx = ((x + self.radius) * scale).astype(np.int64)
            counts = np.bincount(np.clip(idx, 0, self.bins - 1), minlength=self.bins)
            return counts, int(np.count_nonzero(x == 0))
        fast = c_bin_counts(x, self.radius, scale, self.bins) if self.use_c else None
        if fast is None:
            t = x + np.float32(self.radius)
            t *= np.float32(scale)
            zeros = int(np.count_nonzero(x == 0))
            fast = np.bincount(t.astype(np.intp), minlength=self.bins + 1), zeros
        counts, zeros = fast
        return self._fold_top(counts), zeros

    def _fold_top(self, counts: Array) -> Array:
        """bins + 1 counts with the last (x at R exactly) folded into bin bins - 1: the clip."""
        counts[self.bins - 1] += counts[self.bins]
        return counts[: self.bins]

    def _grow(self) -> None:
        """Double R: old bin pairs merge into the middle half of the new bins."""
        merged = self.counts.reshape(-1, 2).sum(axis=1)
        quarter = self.bins // 4
        self.counts = np.zeros(self.bins)
        self.counts[quarter : quarter + merged.size] = merged
        self.radius *= 2.0

    @property
    def edges(self) -> Array:
        return np.linspace(-self.radius, self.radius, self.bins + 1)

    @property
    def centers(self) -> Array:
        e = self.edges
        return (e[:-1] + e[1:]) / 2

    def empty(self) -> bool:
        return not np.isfinite(self.lo)


class ChannelMoments:
    """A tensor's running mean over the calibration samples (the whole map: (H, W, C) of an
    NHWC tensor, (C,) of a fully connected input), and per channel (the last axis) its mean
    square over samples and positions when `squares` (only `variance` reads them); float64.
    Without `maps` only the per-channel sums are kept (`mean`, `variance`; no `mean_map`):
    one C pass over each value instead of a float64 map read and written per sample."""

    def __init__(self, squares: bool = True, maps: bool = True) -> None:
        self.samples = 0
        self.maps = maps
        self.rows = 0  # positions summed into the per-channel sums (maps=False)
        self.sums: Array = np.zeros(0)
        self.squares: Array | None = np.zeros(0) if squares else None

    def update(self, x: Array) -> None:
        x = np.asarray(x, dtype=np.float32)
        if self.samples == 0:
            self.sums = np.zeros(x.shape[1:] if self.maps else x.shape[-1:])
            self.squares = None if self.squares is None else np.zeros(x.shape[-1])
        rows = x.reshape(-1, x.shape[-1])
        if not self.maps:
            self._add_rows(rows)
        elif x.shape[0] == 1:  # one sample: its float64 value added in place (the same sum)
            np.add(self.sums, x[0], out=self.sums)
        else:
            self.sums += x.sum(0, dtype=np.float64)
        if self.squares is not None:
            self.squares += np.einsum("ij,ij->j", rows, rows, dtype=np.float64)
        self.samples += x.shape[0]

    def _add_rows(self, rows: Array) -> None:
        """Each channel's values added to its float64 sum, row by row (in C when it builds)."""
        lib = library()
        if lib is not None:
            rows = np.ascontiguousarray(rows)
            lib.mdla_channel_sums_f32(rows.ctypes, rows.shape[0], rows.shape[1], self.sums.ctypes)
        else:  # the same additions in the same order
            for row in rows:
                self.sums += row
        self.rows += rows.shape[0]

    @property
    def mean_map(self) -> Array:
        """The mean input (one sample's shape without its batch axis)."""
        if not self.maps:
            raise ValueError("these moments were kept without their map: per channel only")
        return self.sums / max(self.samples, 1)

    @property
    def mean(self) -> Array:
        """Per channel: the mean over samples and positions."""
        if not self.maps:
            return self.sums / max(self.rows, 1)
        mean: Array = self.mean_map.reshape(-1, self.sums.shape[-1]).mean(0)
        return mean

    @property
    def variance(self) -> Array:
        """Per channel: the variance over samples and positions."""
        if self.squares is None:
            raise ValueError("these moments were kept without squares: no variance")
        if self.maps:
            count = self.samples * (self.sums.size // max(self.squares.size, 1))
        else:
            count = self.rows
        square = self.squares / max(count, 1)
        return np.maximum(square - self.mean**2, 0.0)  # type: ignore[no-any-return]


def minmax_range(h: Histogram) -> tuple[float, float]:
    return h.lo, h.hi


def percentile_range(h: Histogram, percentile: float) -> tuple[float, float]:
    """Clip each tail at (100 - p)% and p% of the mass (linear within a bin)."""
    cdf = np.cumsum(h.counts) / h.counts.sum()
    edges = h.edges

    def at(q: float) -> float:
        i = int(np.searchsorted(cdf, q))
        i = min(i, h.bins - 1)
        prev = cdf[i - 1] if i > 0 else 0.0
        frac = (q - prev) / (cdf[i] - prev) if cdf[i] > prev else 0.0
        return float(edges[i] + frac * (edges[i + 1] - edges[i]))

    tail = 1.0 - percentile / 100.0
    return max(h.lo, at(tail)), min(h.hi, at(1.0 - tail))


def _quant_error(h: Histogram, lo: Array, hi: Array) -> Array:
    """Expected squared error of uint8-grid quantization of the histogram, per candidate range."""
    c, n = h.centers[None, :], h.counts[None, :]
    lo, hi = np.minimum(lo, 0.0)[:, None], np.maximum(hi, 0.0)[:, None]
    scale = np.maximum((hi - lo) / 255.0, 1e-12)
    q = np.clip(np.round((c - lo) / scale), 0, 255) * scale + lo
    width = 2 * h.radius / h.bins
    return ((((q - c) ** 2) + width**2 / 12.0) * n).sum(axis=1)  # type: ignore[no-any-return]


def mse_range(h: Histogram, steps: int = 100) -> tuple[float, float]:
    """The range alpha*[lo, hi], alpha in (0, 1], with the least expected quantization MSE."""
    alphas = np.linspace(1.0 / steps, 1.0, steps)
    err = _quant_error(h, alphas * h.lo, alphas * h.hi)
    a = float(alphas[int(np.argmin(err))])
    return a * h.lo, a * h.hi


def entropy_range(h: Histogram, levels: int = 128) -> tuple[float, float]:
    """TensorRT's KL calibration on |x|: the threshold T (a bin edge) whose `levels`-level
    quantization Q of the clipped |x| histogram P (outliers folded into P's last bin) has the
    least KL(P || Q); Q spreads each level's mass evenly over that level's non-empty bins."""
    half = h.bins // 2
    mag = h.counts[half:] + h.counts[:half][::-1]  # |x| histogram over [0, R]
    mag[0] -= h.zeros  # exact zeros quantize exactly (the zero point): they carry no error
    nonzero = np.nonzero(mag)[0]
    if nonzero.size == 0:
        return h.lo, h.hi
    top = int(nonzero[-1]) + 1
    best, best_i = np.inf, top
    for i in range(min(levels, top), top + 1):
        p = mag[:i].copy()
        p[-1] += mag[i:].sum()
        starts = np.unique(np.linspace(0, i, min(levels, i) + 1).astype(np.int64)[:-1])
        sums = np.add.reduceat(mag[:i], starts)  # Q is built from the unfolded histogram
        used = np.add.reduceat((p > 0).astype(np.float64), starts)
        group = np.repeat(np.arange(starts.size), np.diff(np.append(starts, i)))
        q = np.where(p > 0, (sums / np.maximum(used, 1.0))[group], 0.0)
        kl = _kl(p, q)
        if kl < best:
            best, best_i = kl, i
    t = best_i * h.radius / half
    return max(h.lo, -float(t)), min(h.hi, float(t))


def _kl(p: Array, q: Array) -> float:
    p = p / p.sum()
    q = q / q.sum() if q.sum() > 0 else q
    mask = p > 0
    with np.errstate(divide="ignore"):
        terms = p[mask] * np.log(p[mask] / np.where(q[mask] > 0, q[mask], 1e-12))
    return float(terms.sum())


def clip_range(h: Histogram, method: str, percentile: float) -> tuple[float, float]:
    if method == "minmax":
        return minmax_range(h)
    if method == "percentile":
        return percentile_range(h, percentile)
    if method == "mse":
        return mse_range(h)
    # A non-negative tensor gets all 256 int8 steps on [0, T]; a signed one 128 per side.
    return entropy_range(h, levels=256 if h.lo >= 0 else 128)
