"""MEAN's code sum (`kernels/mean.code_sum`): the float32 product with a row of ones is the
exact integer sum up to 128 * H*W = 2^24, and beyond that bound the int32 sum is used. MEAN's
fused requantization (`kernels/mean.mean_requant`) against the definition on every sum an
int8 map can give, at the extremes and around the rounding ties."""

from __future__ import annotations

import numpy as np
import pytest

from mdla_quant.arith import add_offset, mbqm, saturate
from mdla_quant.kernels.mean import FLOAT32_EXACT, code_sum, mean_multiplier, mean_requant


def _odd_extreme(side: int) -> np.ndarray:
    """-128 everywhere but one 1: every partial sum is odd once it passes that 1, and the
    total, 1 - 128 * (side^2 - 1), is as far from zero as an int8 map allows."""
    x = np.full((1, side, side, 3), -128, np.int8)
    x[0, 0, 0, :] = 1
    return x


@pytest.mark.parametrize("keepdims", [True, False])
def test_the_sum_is_exact_at_the_float32_bound(keepdims: bool) -> None:
    side = 362  # 128 * 362^2 < 2^24 <= 128 * 363^2
    assert 128 * side * side <= FLOAT32_EXACT < 128 * (side + 1) ** 2
    rng = np.random.default_rng(0)
    for x in (_odd_extreme(side), rng.integers(-128, 128, (2, side, side, 3)).astype(np.int8)):
        want = x.astype(np.int64).sum(axis=(1, 2), keepdims=keepdims)
        got = code_sum(x, (1, 2), keepdims)
        assert got.dtype == np.int64
        assert np.array_equal(got, want)


def test_past_the_bound_the_float32_product_would_round_and_is_not_used() -> None:
    x = _odd_extreme(512)  # 128 * 2^18 = 2^25
    want = x.astype(np.int64).sum(axis=(1, 2))
    rows = x.reshape(1, -1, 3).astype(np.float32)
    approx = np.matmul(np.ones((1, rows.shape[1]), np.float32), rows).reshape(1, 3)
    assert not np.array_equal(approx.astype(np.int64), want)  # the total is odd and > 2^24
    assert np.array_equal(code_sum(x, (1, 2), False), want)


def test_other_axes_sum_in_int32() -> None:
    x = np.random.default_rng(1).integers(-128, 128, (2, 5, 6, 7)).astype(np.int8)
    for axes in [(1,), (3,), (1, 2, 3), (0, 1)]:
        want = x.astype(np.int64).sum(axis=axes, keepdims=True)
        assert np.array_equal(code_sum(x, axes, True), want)


def test_wider_codes_are_not_summed_in_float32() -> None:
    """The float32 bound is int8's: 16-bit codes on a map that int8 may sum in float32 would
    round there (an odd total past 2^24), so they take the integer sum."""
    x = np.full((1, 64, 64, 2), 32767, np.int16)
    x[0, 0, 0, :] = 32766  # odd total, 32767 * 4096 - 1 > 2^24
    want = x.astype(np.int64).sum(axis=(1, 2))
    assert np.array_equal(code_sum(x, (1, 2), False), want)


def _mean_definition(
    total: np.ndarray, mult: tuple[int, int], zs: tuple[int, int], n: int, modes: tuple[str, str]
) -> np.ndarray:
    (m2, s2), (z_in, z_out), (rnd, acc) = mult, zs, modes
    return saturate(add_offset(mbqm(total - z_in * n, m2, s2, rnd, acc), z_out, acc))


@pytest.mark.parametrize("accumulator", ["saturate", "wrap"])
@pytest.mark.parametrize("rounding", ["double", "single"])
def test_fused_mean_requantization_is_the_definition(rounding: str, accumulator: str) -> None:
    rng = np.random.default_rng(5)
    taken = 0
    for n in (1, 7, 49, 196, 3136, 12544, 2**23):
        for s_in, s_out, z_in, z_out in [
            (0.02, 0.02, 0, 0),
            (0.05, 0.013, -128, 127),
            (0.013, 0.05, 127, -128),
            (0.1, 0.0007, 3, -9),  # a gain of ~140: left shifts
            (1e-3, 0.9, -5, 17),
            (2e-9, 1.0, 0, 0),  # a tiny multiplier
        ]:
            m2, s2 = mean_multiplier(np.float32(s_in), np.float32(s_out), n, rounding)
            rq = mean_requant(m2, s2, z_in, n, z_out, rounding, accumulator)
            if rq is None:
                continue
            taken += 1
            ends = np.arange(-2000, 2001, dtype=np.int64)
            total = np.concatenate(
                [ends - 128 * n, 127 * n - ends, ends, rng.integers(-128 * n, 127 * n + 1, 4000)]
            )
            total = np.clip(total, -128 * n, 127 * n)
            out = np.empty((1, total.size), np.int8)
            scratch = (
                np.empty(out.shape, np.int64),
                *(np.empty(out.shape, np.int32) for _ in "vt"),
            )
            rq.tiled(total.size).apply(total.reshape(1, -1), out, scratch)
            want = _mean_definition(total, (m2, s2), (z_in, z_out), n, (rounding, accumulator))
            assert np.array_equal(out[0], want), (n, s_in, s_out, z_in, z_out)
    assert taken >= 30  # the fused form is what runs for ordinary parameters


def test_mean_requantization_declines_what_it_cannot_prove() -> None:
    """A gain of 2^30 over two elements: x * 2^30 leaves int32, where the accumulator's wrap or
    saturation decides, so the definition runs (and gives what it gives)."""
    m2, s2 = mean_multiplier(np.float32(1.0), np.float32(2.0**-30), 2, "double")
    assert s2 == 30
    assert mean_requant(m2, s2, 0, 2, 0, "double", "saturate") is None
    assert mean_requant(m2, s2 - 23, 0, 2, 0, "double", "saturate") is not None
