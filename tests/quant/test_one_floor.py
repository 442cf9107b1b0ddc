"""`Requant`'s one-floor form (the requantization as one float64 floor) against `arith.mbqm`.

It applies under single rounding, and under double rounding where the clamp's lower bound
lo = act_min - z_out is >= 0; it treats a channel whose every possible accumulator gives one
code as that constant, and past 2^53 it relies on rounding keeping the side of the clamp.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_quant.arith import add_offset, mbqm, quantize_multiplier
from mdla_quant.kernels.requant import F64_EXACT, K_SIDE, Requant

Array = np.ndarray[Any, Any]

REALS = [0.0003, 0.011, 0.07, 0.49, 0.5, 0.9, 1.7]  # e = 11 .. 1, e = 0, e = 0 with a left shift


def _definition(
    acc: Array, m: Array, s: Array, rounding: str, z: int, act: tuple[int, int]
) -> Array:
    out = add_offset(mbqm(acc, m, s, rounding), z)
    return np.clip(out, *act).astype(np.int8)


def _apply(rq: Requant, raw: Array) -> Array:
    out = np.empty(raw.shape, np.int8)
    scratch = (np.empty(raw.shape, np.int64), *(np.empty(raw.shape, np.int32) for _ in "vt"))
    rq.apply(raw.astype(np.float64), out, scratch)
    return out


def _accumulators(bound: int, channels: int, seed: int) -> Array:
    """Every value near zero (each rounding's ties, both signs), the bounds, random values."""
    rng = np.random.default_rng(seed)
    dense = np.arange(-6000, 6000, dtype=np.int64)
    rand = rng.integers(-bound, bound + 1, size=6000)
    col = np.concatenate([dense, [bound, 1 - bound, -bound, bound - 1], rand])
    return np.repeat(col[:, None], channels, axis=1)


CLAMPS = [(-100, (-100, 127)), (-128, (-128, 127)), (40, (43, 90)), (127, (127, 127))]


@pytest.mark.parametrize("rounding", ["double", "single"])
@pytest.mark.parametrize(("z", "act"), CLAMPS)
def test_one_floor_is_mbqm_where_the_clamp_starts_at_the_offset(
    rounding: str, z: int, act: tuple[int, int]
) -> None:
    m, s = quantize_multiplier(np.array(REALS), rounding)
    if rounding == "single":
        m, s = m[:-1], s[:-1]  # single rounding's s > 0 with a large M is no fused case
    bound = 2**21  # R * M' < 2^53 for M' = 1.7 * 2^31
    acc = _accumulators(bound, len(m), 1)
    zeros = np.zeros(len(m), np.int64)
    bounds = np.full(len(m), bound, np.int64)
    rq = Requant.build(m, s, zeros, bounds, bounds, rounding, z, act)
    assert rq is not None
    assert rq.gmult is not None  # the one-floor passes are taken
    assert np.array_equal(_apply(rq, acc), _definition(acc, m, s, rounding, z, act))


@pytest.mark.parametrize(("z", "act"), [(0, (-128, 127)), (5, (-3, 90))])
def test_double_rounding_below_the_offset_keeps_the_sign_correction(
    z: int, act: tuple[int, int]
) -> None:
    """lo < 0: RDBPOT's ties away from zero on negative values show, the one floor declines."""
    m, s = quantize_multiplier(np.array(REALS[:3]), "double")
    bounds = np.full(3, 2**22, np.int64)
    rq = Requant.build(m, s, np.zeros(3, np.int64), bounds, bounds, "double", z, act)
    assert rq is not None
    assert rq.gmult is None
    acc = _accumulators(2**22, 3, 2)
    assert np.array_equal(_apply(rq, acc), _definition(acc, m, s, "double", z, act))
    # the one floor alone (no sign correction) is wrong here: that is why it declines
    one = Requant.build(m, s, np.zeros(3, np.int64), bounds, bounds, "double", z, (z, act[1]))
    assert one is not None
    assert one.gmult is not None
    floor_only = Requant(**{**_fields(rq), "gmult": one.gmult, "gadd": one.gadd})
    shifted = _apply(floor_only, acc).astype(np.int64) + (act[0] - z)  # undo one's clamp offset
    assert not np.array_equal(np.clip(shifted, *act), _definition(acc, m, s, "double", z, act))


def _fields(rq: Requant) -> dict[str, Any]:
    return {name: getattr(rq, name) for name in Requant.__dataclass_fields__ if name != "tiles"}


def test_a_channel_whose_every_accumulator_gives_one_code_is_that_constant() -> None:
    """A huge offset (a dead channel's bias) and a small raw range: every acc clamps to 127."""
    m, s = quantize_multiplier(np.array([0.011, 0.011]), "double")
    off = np.array([2**30, 0], np.int64)
    raw_bound = np.array([2**16, 2**16], np.int64)
    bound = raw_bound + np.abs(off)
    rq = Requant.build(m, s, off, bound, raw_bound, "double", -128, (-128, 127))
    assert rq is not None
    assert rq.gmult is not None
    assert rq.gadd is not None
    assert rq.gmult[0] == 0.0  # constant: 0 * r + code
    assert rq.gmult[1] != 0.0
    raw = _accumulators(2**16, 2, 3)
    want = _definition(raw + off, m, s, "double", -128, (-128, 127))
    assert np.all(want[:, 0] == 127)
    assert np.array_equal(_apply(rq, raw), want)


@pytest.mark.parametrize("rounding", ["double", "single"])
def test_past_2_to_the_53_the_clamp_side_is_kept_up_to_k_side(rounding: str) -> None:
    """|acc * M' + A| may pass 2^53 where k <= K_SIDE: such sums lie far outside the clamp,
    and their rounding keeps them there. With k > K_SIDE the form declines."""
    m, s = quantize_multiplier(np.array([2.0**-8, 0.37]), rounding)
    m2 = m.astype(np.int64) << np.maximum(s, 0)
    raw_bound = (F64_EXACT - 1) // m2  # R * M' just below 2^53
    off = np.array([2**20, -(2**20)], np.int64)
    bound = raw_bound + np.abs(off)  # so acc * M' passes 2^53
    assert int(bound[0]) * int(m2[0]) >= F64_EXACT
    rq = Requant.build(m, s, off, bound, raw_bound, rounding, -128, (-128, 127))
    assert rq is not None
    assert rq.gmult is not None
    rng = np.random.default_rng(4)
    edges = np.stack([raw_bound, -raw_bound, raw_bound - 1, 1 - raw_bound])
    near = np.arange(-3000, 3000)[:, None] * (2**20 // m2.clip(1, None)).clip(1, None) - off
    raw = np.concatenate([edges, rng.integers(-raw_bound, raw_bound + 1, (4000, 2)), near])
    raw = np.clip(raw, -raw_bound, raw_bound)
    want = _definition(raw + off, m, s, rounding, -128, (-128, 127))
    assert np.array_equal(_apply(rq, raw), want)
    # with a smaller multiplier (k = 31 + e > K_SIDE) the same bounds are declined
    m_small, s_small = quantize_multiplier(np.array([2.0 ** -(K_SIDE - 29)] * 2), rounding)
    m2_small = m_small.astype(np.int64)
    big = (F64_EXACT - 1) // m2_small
    rq = Requant.build(m_small, s_small, off, big + np.abs(off), big, rounding, -128, (-128, 127))
    assert rq is not None
    assert rq.gmult is None
