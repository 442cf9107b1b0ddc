"""The calibration histogram's binning in C (`csrc/histogram.c`), built on first use.

    counts, zeros = c_bin_counts(x, radius, scale, bins)   # int64 [bins + 1], int; or None

gives what numpy's `np.bincount(((x + R) * scale).astype(intp), minlength=bins + 1)` and
`np.count_nonzero(x == 0)` give for a finite float32 `x` with |x| <= R, in one pass instead of
six (the sum, the product, the cast, the bincount, which serializes on a ReLU's zeros, all in
one bin, the comparison and its count). Each float32 operation is the numpy form's, in its
order, and the C truncation is numpy's cast, so the counts are the same. None when there is
no C compiler or the library cannot be built or loaded (`native.py`; the caller keeps numpy's
form), or for a bin count float32 cannot hold exactly.
"""

from __future__ import annotations

import ctypes
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
