"""MEAN's code sum (`kernels/mean.code_sum`): the float32 product with a row of ones is the
exact integer sum up to 128 * H*W = 2^24, and beyond that bound the int32 sum is used."""

from __future__ import annotations

import numpy as np
import pytest

from mdla_quant.kernels.mean import FLOAT32_EXACT, code_sum


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
