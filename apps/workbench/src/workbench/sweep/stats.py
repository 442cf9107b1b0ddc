"""The margin by which FP32's top-1 leads, which a sweep row's `decided` counts come from (an
input is decided when it leads by at least 0.05); the rows' Wilson intervals are
`held_out.wilson`'s."""

from __future__ import annotations

from typing import Any

import numpy as np

DECIDED = 0.05  # FP32 top-1 probability minus the runner-up's, at least this: decided


def margin(logits: np.ndarray[Any, Any]) -> float:
    """FP32's top-1 softmax probability minus the runner-up's (1.0 for a single class)."""
    z = np.asarray(logits, np.float64).ravel()
    if z.size < 2:
        return 1.0
    p = np.exp(z - z.max())
    top = np.sort(p / p.sum())[::-1]
    return float(top[0] - top[1])
