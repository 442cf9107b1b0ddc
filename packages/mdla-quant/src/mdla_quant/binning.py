"""The calibration histogram's binning in C (`csrc/histogram.c`), built on first use.

    counts, zeros = c_bin_counts(x, radius, scale, bins)   # int64 [bins + 1], int; or None

gives what numpy's `np.bincount(((x + R) * scale).astype(intp), minlength=bins + 1)` and
`np.count_nonzero(x == 0)` give for a finite float32 `x` with |x| <= R, in one pass instead of
six (the sum, the product, the cast, the bincount, which serializes on a ReLU's zeros, all in
one bin, the comparison and its count). Each float32 operation is the numpy form's, in its
order, and the C truncation is numpy's cast, so the counts are the same. None when there is
no C compiler or the library cannot be built or loaded (`native.py`; the caller keeps numpy's
form), or for a bin count float32 cannot hold exactly.

    seen = c_observe(x, radius, scale, bins)   # (counts, zeros, lo, hi) or None

is the same binning with `float(x.min())` and `float(x.max())` found in the same pass (numpy's
two reductions were two more reads of each activation), for `Histogram.update` at a radius it
already has: None unless every value is finite and within the radius (so the counts are the
ones above) and the minimum and maximum are numpy's: a NaN, an infinity, a value beyond the
radius, or a zero minimum or maximum among zeros of both signs (numpy's reductions may return
either) give None, and the caller takes numpy's reductions and `c_bin_counts`.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from mdla_quant.native import library

Array = np.ndarray[Any, Any]

MAX_BINS = (1 << 24) - 1


def _kernel() -> Any | None:
    """mdla_hist_bin from the built library (`native.library`), or None without one."""
    lib = library()
    return None if lib is None else lib.mdla_hist_bin


def c_bin_counts(x: Array, radius: float, scale: float, bins: int) -> tuple[Array, int] | None:
    """Counts of (int)((x + R) * scale) over 0..bins for finite float32 x, |x| <= R, and the
    number of exact zeros in x; None when the C kernel is unavailable or refuses the bin count
    (then use numpy's form)."""
    fn = _kernel() if 0 < bins <= MAX_BINS else None
    if fn is None:
        return None
    x = np.ascontiguousarray(x, dtype=np.float32)
    counts = np.zeros(bins + 1, dtype=np.int64)
    zeros = ctypes.c_int64(0)
    rc = fn(x.ctypes.data, x.size, radius, scale, counts.ctypes.data, bins, ctypes.byref(zeros))
    return (counts, zeros.value) if rc == 0 else None


SEEN_POS_ZERO, SEEN_NEG_ZERO = 1, 2  # csrc/histogram.c's flags


def c_observe(
    x: Array, radius: float, scale: float, bins: int
) -> tuple[Array, int, float, float] | None:
    """`c_bin_counts(x, radius, scale, bins)` with x's min and max, found in one pass; None
    when C is unavailable or cannot vouch for them (see the module docstring)."""
    lib = library() if 0 < bins <= MAX_BINS and 0 < radius < math.inf else None
    if lib is None or x.size == 0:
        return None
    x = np.ascontiguousarray(x, dtype=np.float32)
    counts = np.zeros(bins + 1, dtype=np.int64)
    zeros = np.zeros(1, dtype=np.int64)
    found = np.empty(2, dtype=np.float32)
    seen = np.zeros(1, dtype=np.int32)
    args = (x.ctypes.data, x.size, radius, scale, counts.ctypes.data, bins, zeros.ctypes.data)
    if lib.mdla_hist_observe(*args, found.ctypes.data, seen.ctypes.data) != 0:
        return None
    lo, hi, flags = float(found[0]), float(found[1]), int(seen[0])
    both_zeros = SEEN_POS_ZERO | SEEN_NEG_ZERO
    finite = math.isfinite(lo) and math.isfinite(hi)  # (a NaN is the min or the max found)
    if not finite or not (-radius <= lo and hi <= radius):
        return None
    if flags & both_zeros == both_zeros and (lo == 0 or hi == 0):
        return None
    return counts, int(zeros[0]), lo, hi
