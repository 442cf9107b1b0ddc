"""Histogram's fast binning (finite inputs) gives the definition's bins exactly.

The definition: bin(x) = clip(int((x + R) * (bins / 2R)), 0, bins - 1) in float32; the fast form
drops the clip (folding bin `bins`, x = R, into the last) and multiplies in place, in numpy or in
one pass of C (`mdla_quant.binning`). Checked on the edges where they could part: x = +-R exactly,
values a float32 ulp inside the edges and the bin boundaries, exact zeros, tiny and huge radii,
every bin count, for both fast forms.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdla_quant import binning
from mdla_quant.observers import Histogram


@pytest.fixture(params=[True, False], ids=["c", "numpy"])
def use_c(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Each fast-form test runs with the C kernel and with numpy's form."""
    monkeypatch.setattr(Histogram, "use_c", request.param)
    return bool(request.param)


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
def test_fast_binning_is_the_definition(radius: float, bins: int, use_c: bool) -> None:
    h = Histogram(bins)
    h.radius = radius
    x = edge_values(radius, bins, np.random.default_rng(bins))
    want, want_zeros = h._bin_counts(x, finite=False)
    got, zeros = h._bin_counts(x, finite=True)
    np.testing.assert_array_equal(got, want)
    assert zeros == want_zeros == np.count_nonzero(x == 0) >= 1
    assert got[bins - 1] >= 1  # x = R is binned at the top end
    assert got[0] >= 1  # and x = -R at the bottom


def test_update_streams_the_same_as_the_definition(use_c: bool) -> None:
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
        want += h._bin_counts(x, finite=False)[0]
        zeros += int(np.count_nonzero(x == 0))
    np.testing.assert_array_equal(h.counts, want)
    assert h.zeros == zeros > 0


def test_non_finite_input_takes_the_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Histogram, "use_c", False)
    h = Histogram(16)
    h.radius = 1.0
    x = np.array([0.5, np.nan, -0.5], np.float32)
    with np.errstate(invalid="ignore"):  # NaN -> int: numpy warns, then gives int64 min
        counts, _ = h._bin_counts(x, finite=False)  # ... which the clip puts in bin 0
        assert counts.sum() == 3
        with pytest.raises(ValueError, match="negative"):  # why the fast form needs finite x
            h._bin_counts(x, finite=True)


def test_the_c_kernel_builds_and_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine has a C compiler, so the fast form must be the C one: a silent fallback to
    numpy would pass every equality test above while losing the speed."""
    assert binning._kernel() is not None
    calls: list[int] = []
    real = binning.c_bin_counts

    def spy(x: np.ndarray, radius: float, scale: float, bins: int) -> tuple[np.ndarray, int] | None:
        calls.append(x.size)
        return real(x, radius, scale, bins)

    monkeypatch.setattr("mdla_quant.observers.c_bin_counts", spy)
    Histogram(64).update(np.linspace(-1, 1, 1001, dtype=np.float32))
    assert calls == [1001]


@pytest.mark.parametrize("n", [0, 1, 3, 4, 255, 256, 257, 1031])
def test_c_counts_every_length_and_a_run_of_zeros(n: int) -> None:
    """Lengths around the kernel's 4 ways and 256-value blocks; half of them exact zeros (one
    bin, the run the sub-histograms split), from a strided view (the kernel reads a copy)."""
    rng = np.random.default_rng(n)
    x = np.maximum(rng.standard_normal(2 * n).astype(np.float32), 0)[::2]
    radius, bins = 8.0, 2048
    got = binning.c_bin_counts(x, radius, bins / (2 * radius), bins)
    t = (x + np.float32(radius)) * np.float32(bins / (2 * radius))
    want = np.bincount(t.astype(np.intp), minlength=bins + 1)
    assert got is not None
    assert got[0].dtype == np.int64
    np.testing.assert_array_equal(got[0], want)
    assert got[1] == np.count_nonzero(x == 0)


def test_c_clamps_what_the_caller_promised_not_to_pass() -> None:
    """Values outside [-R, R] and NaN (never passed: `update` takes the definition's form for
    them) land in the end bins instead of being counted out of bounds."""
    x = np.array([np.nan, 1e30, -1e30, np.inf, -np.inf, 0.0, -0.0], np.float32)
    with np.errstate(invalid="ignore"):
        got = binning.c_bin_counts(x, 1.0, 4.0, 8)
    assert got is not None
    np.testing.assert_array_equal(got[0], [2, 0, 0, 0, 2, 0, 0, 0, 3])
    assert got[1] == 2  # both zeros


def test_c_refuses_a_bin_count_float32_cannot_hold() -> None:
    x = np.zeros(4, np.float32)
    assert binning.c_bin_counts(x, 1.0, 1.0, binning.MAX_BINS + 1) is None
    assert binning.c_bin_counts(x, 1.0, 1.0, 0) is None


def _bits(v: float) -> bytes:
    return np.float64(v).tobytes()  # the sign of a zero, a NaN equal to itself


def _state(h: Histogram) -> tuple[object, ...]:
    """Everything an update leaves, its floats bit for bit."""
    last = h.last
    kept = None if last is None else (last.counts.tolist(), last.zeros, last.radius, last.size)
    ends = None if last is None else (_bits(last.lo), _bits(last.hi), last.finite)
    return (h.counts.tolist(), _bits(h.lo), _bits(h.hi), h.radius, h.zeros, h.updates, kept, ends)


def _batches(rng: np.random.Generator) -> list[np.ndarray]:
    """A stream through every case of the one-pass update: inside the radius, growing it,
    ReLU zeros, zeros of both signs at the min or at the max, a lone -0, NaN, infinities,
    +-R exactly, odd lengths around the kernel's blocks and lanes, a strided view."""
    relu = np.maximum(rng.standard_normal(1031).astype(np.float32), 0)
    signed = rng.standard_normal(257).astype(np.float32)
    return [
        relu,
        relu * np.float32(0.25),
        signed,
        signed * np.float32(9),  # beyond the radius: it grows
        np.array([-1.0, -0.0, 0.0, -0.0], np.float32),  # max 0 with both signs
        np.array([0.0, 2.0, -0.0, 1.0], np.float32),  # min 0 with both signs
        np.array([-0.0, 3.0], np.float32),  # min -0 alone
        np.array([-3.0, -0.0], np.float32),  # max -0 alone
        np.zeros(7, np.float32),
        np.array([32.0, -32.0, 0.0], np.float32),  # +-R exactly
        rng.standard_normal(2 * 300).astype(np.float32)[::2],
        np.array([-2.5], np.float32),
        np.array([0.5, np.nan, -0.5], np.float32),
        np.array([1.0, np.inf], np.float32),  # (the radius is infinite from here)
        np.array([-np.inf, 1.0], np.float32),
    ]


@pytest.mark.parametrize("keep_last", [False, True])
def test_the_one_pass_update_leaves_what_numpy_s_reductions_do(
    monkeypatch: pytest.MonkeyPatch, keep_last: bool
) -> None:
    """Update by update, a histogram updated by `c_observe`'s one pass holds what one updated
    by numpy's min and max and the binning holds (the signs of zeros too), and the one pass
    took every update it could (a silent fallback would pass the equality and lose the
    speed)."""
    batches = _batches(np.random.default_rng(7))
    one, two = Histogram(256, keep_last), Histogram(256, keep_last)
    taken: list[bool] = []
    real = Histogram._update_in_one_pass

    def spy(self: Histogram, x: np.ndarray) -> bool:
        if self is two:
            return False
        taken.append(real(self, x))
        return taken[-1]

    monkeypatch.setattr(Histogram, "_update_in_one_pass", spy)
    with np.errstate(invalid="ignore"):
        for x in batches:
            one.update(x)
            two.update(x)
            assert _state(one) == _state(two)
    # the first (no radius yet), the growing one, both-signed zero extremes, NaN, infinities
    assert taken == [False, True, True, False, False, False, *[True] * 6, False, False, False]


def test_c_observe_finds_numpy_s_min_and_max_or_declines() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 8, 9, 255, 256, 257, 4099):
        x = rng.uniform(-4, 4, n).astype(np.float32)
        got = binning.c_observe(x, 4.0, 2048 / 8, 2048)
        assert got is not None
        assert (got[2], got[3]) == (float(x.min()), float(x.max()))
        want = binning.c_bin_counts(x, 4.0, 2048 / 8, 2048)
        assert want is not None
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
    assert binning.c_observe(np.array([1.0, 4.5], np.float32), 4.0, 1.0, 8) is None
    assert binning.c_observe(np.array([-4.5, 1.0], np.float32), 4.0, 1.0, 8) is None
    for nan in (np.nan, -np.nan):
        assert binning.c_observe(np.array([1.0, nan, -1.0], np.float32), 4.0, 1.0, 8) is None
    assert binning.c_observe(np.array([1.0, -0.0, 0.0], np.float32), 4.0, 1.0, 8) is None
    assert binning.c_observe(np.zeros(3, np.float32), 0.0, 1.0, 8) is None
    assert binning.c_observe(np.array([-np.inf, 1.0], np.float32), np.inf, 0.0, 8) is None
    lone = binning.c_observe(np.array([2.0, -0.0], np.float32), 4.0, 1.0, 8)
    assert lone is not None
    assert lone[2] == 0.0
    assert np.signbit(lone[2])
