"""Histogram's fast binning (finite inputs) gives the definition's bins exactly.

The definition: bin(x) = clip(int((x + R) * (bins / 2R)), 0, bins - 1) in float32; the fast form
drops the clip (folding bin `bins`, x = R, into the last) and multiplies in place. Checked on the
edges where they could part: x = +-R exactly, values a float32 ulp inside the edges and the bin
boundaries, exact zeros, tiny and huge radii, every bin count.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdla_quant.observers import Histogram


def edge_values(radius: float, bins: int, rng: np.random.Generator) -> np.ndarray:
    r = np.float32(radius)
    width = np.float32(2 * radius / bins)
    boundaries = -r + width * np.arange(bins + 1, dtype=np.float32)
    near = np.concatenate(
        [
            boundaries,
            np.nextafter(boundaries, np.float32(np.inf)),
            np.nextafter(boundaries, np.float32(-np.inf)),
        ]
    )
    x = np.concatenate(
        [
            [r, -r, np.float32(0), np.nextafter(r, np.float32(0))],
            np.clip(near, -r, r),
            rng.uniform(-radius, radius, 5000).astype(np.float32),
        ]
    )
    return x.astype(np.float32)


@pytest.mark.parametrize("radius", [2.0**-100, 2.0**-3, 1.0, 64.0, 2.0**60])
@pytest.mark.parametrize("bins", [2, 256, 2048])
def test_fast_binning_is_the_definition(radius: float, bins: int) -> None:
    h = Histogram(bins)
    h.radius = radius
    x = edge_values(radius, bins, np.random.default_rng(bins))
    want = h._bin_counts(x, finite=False)
    got = h._bin_counts(x, finite=True)
    np.testing.assert_array_equal(got, want)
    assert got[bins - 1] >= 1  # x = R is binned at the top end
    assert got[0] >= 1  # and x = -R at the bottom


def test_update_streams_the_same_as_the_definition() -> None:
    """Whole updates (growth included) against the definition applied batch by batch."""
    rng = np.random.default_rng(4)
    h = Histogram(512)
    want, zeros = np.zeros(512), 0
    for scale in (0.01, 0.5, 3.0, 40.0, 2.0):
        x = np.maximum(rng.standard_normal(20_000).astype(np.float32) * np.float32(scale), 0)
        before = h.radius
        h.update(x)
        if h.radius != before and before:
            while before < h.radius:  # replay the growth on the expected counts
                merged = want.reshape(-1, 2).sum(axis=1)
                want = np.zeros(512)
                want[128 : 128 + merged.size] = merged
                before *= 2
        want += h._bin_counts(x, finite=False)
        zeros += int(np.count_nonzero(x == 0))
    np.testing.assert_array_equal(h.counts, want)
    assert h.zeros == zeros > 0


def test_non_finite_input_takes_the_definition() -> None:
    h = Histogram(16)
    h.radius = 1.0
    x = np.array([0.5, np.nan, -0.5], np.float32)
    with np.errstate(invalid="ignore"):  # NaN -> int: numpy warns, then gives int64 min
        counts = h._bin_counts(x, finite=False)  # ... which the clip puts in bin 0
        assert counts.sum() == 3
        with pytest.raises(ValueError, match="negative"):  # why the fast form needs finite x
            h._bin_counts(x, finite=True)
