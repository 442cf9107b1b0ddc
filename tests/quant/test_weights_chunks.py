"""Weight quantization in chunks of rows gives the whole-tensor definition's int8 and scales.

The definition (as it was, on whole float64 copies): s = max|float64(w)| / 127 per channel,
raised to min_scale, as float32; q = int8(clip(round_half_away(float64(w) / float64(s)),
-127, 127)). Checked on ties (w / s exactly k + 0.5), NaN, zero channels, per-tensor and
per-channel scales along every axis, and chunks that end mid-tensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_quant import weights
from mdla_quant.arith import round_half_away
from mdla_quant.weights import quantize_weights


def definition(
    w: np.ndarray, channel_dim: int | None, min_scale: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    w64 = w.astype(np.float64)
    if channel_dim is None:
        amax = np.array([np.abs(w64).max(initial=0.0)])
    else:
        amax = np.abs(np.moveaxis(w64, channel_dim, 0)).reshape(w.shape[channel_dim], -1).max(1)
    scale64 = np.where(amax > 0, amax / 127.0, 1.0)
    if min_scale is not None:
        scale64 = np.maximum(scale64, min_scale)
    scale = scale64.astype(np.float32)
    shape = [1] * w.ndim
    if channel_dim is not None:
        shape[channel_dim] = -1
    q = np.clip(round_half_away(w64 / scale.astype(np.float64).reshape(shape)), -127, 127)
    return q.astype(np.int8), scale


def weights_with_ties(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random weights, one channel all zeros, and values at exact half steps of 127ths."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(np.float32)
    w[0] = 0.0
    flat = w.reshape(-1)
    flat[-8:] = np.float32(127.0), np.float32(-127.0), 2.5, -2.5, 0.5, -0.5, 63.5, -63.5
    return w


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
@pytest.mark.parametrize(
    ("shape", "dim"),
    [((16, 3, 3, 8), 0), ((1, 3, 3, 24), 3), ((10, 37), 0), ((6, 5, 4), 1), ((9, 4), None)],
)
def test_chunks_are_the_definition(
    chunk: int, shape: tuple[int, ...], dim: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(weights, "CHUNK", chunk)
    w = weights_with_ties(shape, len(shape) + chunk)
    for min_scale in (None, np.float64(0.02)):
        q, params = quantize_weights(w, dim, min_scale)
        want, scale = definition(w, dim, min_scale)
        assert q.dtype == np.int8
        assert q.tobytes() == want.tobytes()
        assert params.scale == tuple(float(s) for s in scale)


def test_a_nan_weight_rounds_as_in_the_definition() -> None:
    w = weights_with_ties((4, 6), 3)
    w[2, 1] = np.nan
    with np.errstate(invalid="ignore"):
        q, params = quantize_weights(w, 0)
        want, scale = definition(w, 0)
    assert q.tobytes() == want.tobytes()
    assert np.array_equal(np.array(params.scale), scale.astype(np.float64), equal_nan=True)


def test_float64_and_integer_weights() -> None:
    w = weights_with_ties((5, 7), 9).astype(np.float64) * 3
    assert quantize_weights(w, 0)[0].tobytes() == definition(w, 0)[0].tobytes()
    wi = np.arange(-20, 20, dtype=np.int32).reshape(4, 10)
    assert quantize_weights(wi, None)[0].tobytes() == definition(wi, None)[0].tobytes()
