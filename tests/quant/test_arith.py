"""The fixed-point primitives: hand-worked values, edge cases, and Python-integer restatements."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mdla_quant.arith import (
    INT32_MAX,
    INT32_MIN,
    check_rounding,
    mbqm,
    quantize_multiplier,
    rdbpot,
    round_half_away,
    srdhm,
)
from mdla_quant.errors import QuantError


def test_round_half_away_from_zero_in_both_precisions() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.4999, -7.0])
    assert round_half_away(x).tolist() == [1, 2, 3, -1, -3, 2, -7]
    assert round_half_away(x.astype(np.float32)).tolist() == [1, 2, 3, -1, -3, 2, -7]
    assert round_half_away(x.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize(
    ("real", "want"),
    [
        (0.5, (2**30, 0)),
        (1.0, (2**30, 1)),
        (0.75, (3 * 2**29, 0)),
        (0.0, (0, 0)),
        (2.0**-33, (0, 0)),  # frexp exponent -32 < -31: flushed to zero
        (1 - 2.0**-40, (2**30, 1)),  # rounds up to 2^31: carried into the exponent
        (0.1, (round(0.8 * 2**31), -3)),
    ],
)
def test_quantize_multiplier(real: float, want: tuple[int, int]) -> None:
    m, s = quantize_multiplier(real)
    assert (int(m), int(s)) == want


def test_quantize_multiplier_flush_and_single_rounding_cap() -> None:
    assert [int(v) for v in quantize_multiplier(2.0**-33)] == [0, 0]
    assert [int(v) for v in quantize_multiplier(1e-12)] == [0, 0]
    assert [int(v) for v in quantize_multiplier(2.0**31)] == [2**30, 32]
    assert [int(v) for v in quantize_multiplier(2.0**31, "single")] == [INT32_MAX, 30]


def test_quantize_multiplier_vectorizes_and_rejects_bad_input() -> None:
    m, s = quantize_multiplier(np.array([0.5, 0.25, 3.0]))
    assert m.tolist() == [2**30, 2**30, 3 * 2**29]
    assert s.tolist() == [0, -1, 2]
    with pytest.raises(QuantError, match="finite and >= 0"):
        quantize_multiplier(-1.0)
    with pytest.raises(QuantError, match="unknown rounding"):
        check_rounding("stochastic")


def test_srdhm_rounds_ties_up_and_saturates() -> None:
    a = np.array([2**30, 1, -1, INT32_MIN, INT32_MAX, 3])
    b = np.array([2**30, 2**30, 2**30, INT32_MIN, INT32_MAX, 2**30])
    # 2^60/2^31 = 2^29; 0.5 -> 1; -0.5 -> 0 (ties toward +inf); saturation; 1.5 -> 2
    assert srdhm(a, b).tolist() == [2**29, 1, 0, INT32_MAX, INT32_MAX - 1, 2]


def test_rdbpot_rounds_ties_away_from_zero() -> None:
    v = np.array([5, -5, 3, -3, 4, -6, -2, 2, 7, 0])
    e = np.array([1, 1, 1, 1, 2, 2, 2, 2, 0, 5])
    assert rdbpot(v, e).tolist() == [3, -3, 2, -2, 1, -2, -1, 1, 7, 0]


def _double_py(x: int, m: int, s: int) -> int:
    """gemmlowp's MBQM with Python integers and true division, as a restatement."""
    a = x * 2 ** max(s, 0)
    hi = (a * m + 2**30) // 2**31 if not a == m == INT32_MIN else INT32_MAX
    e = max(-s, 0)
    q = (2 * abs(hi) + 2**e) // 2 ** (e + 1)  # floor(|hi| / 2^e + 1/2)
    return int(math.copysign(q, hi))


def test_mbqm_both_roundings_match_python_integers() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-(2**24), 2**24, 20000)
    m = rng.integers(2**30, 2**31, 20000)
    s = rng.integers(-20, 4, 20000)
    double, single = mbqm(x, m, s), mbqm(x, m, s, "single")
    for i in range(0, 20000, 7):
        xi, mi, si = int(x[i]), int(m[i]), int(s[i])
        assert double[i] == _double_py(xi, mi, si)
        assert single[i] == (xi * mi + 2 ** (30 - si)) >> (31 - si)
    assert np.all(np.abs(double - single) <= 1)
    assert np.count_nonzero(double != single) > 0


def test_mbqm_known_difference_between_roundings() -> None:
    # x * 0.25 = -0.5: double rounding gives -1 (SRDHM -> -1, then away from zero), single 0.
    assert int(mbqm(np.int64(-2), 2**30, -1)) == -1
    assert int(mbqm(np.int64(-2), 2**30, -1, "single")) == 0


def test_mbqm_per_channel_broadcast() -> None:
    acc = np.arange(-6, 6).reshape(3, 4) * 1000
    m, s = quantize_multiplier(np.array([0.5, 0.25, 0.125, 1.5]))
    out = mbqm(acc, m, s)
    expected = np.sign(acc * [0.5, 0.25, 0.125, 1.5]) * np.floor(
        np.abs(acc * [0.5, 0.25, 0.125, 1.5]) + 0.5
    )
    assert out.tolist() == expected.tolist()
