"""The numbers a sweep row holds: a proportion with its 95 % Wilson score interval, and the
margin by which FP32's top-1 leads (an input is `decided` when it leads by at least 0.05).

    wilson(193, 200)        # (0.9293..., 0.9829...)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Z95 = 1.959963984540054  # the two-sided 95 % normal quantile
DECIDED = 0.05  # FP32 top-1 probability minus the runner-up's, at least this: decided


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials: centre (p + z²/2n) / (1 + z²/n),
    half-width z sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n); (0, 1) for no trials."""
    if not 0 <= k <= n:
        raise ValueError(f"wilson: {k} successes in {n} trials")
    if n == 0:
        return 0.0, 1.0
    p, z2 = k / n, z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def margin(logits: np.ndarray[Any, Any]) -> float:
    """FP32's top-1 softmax probability minus the runner-up's (1.0 for a single class)."""
    z = np.asarray(logits, np.float64).ravel()
    if z.size < 2:
        return 1.0
    p = np.exp(z - z.max())
    top = np.sort(p / p.sum())[::-1]
    return float(top[0] - top[1])
