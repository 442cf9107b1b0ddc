"""`mdla_quant.joint`: the int16 choice by backward elimination from all-int16, which sees what
tensors gain together, where per-tensor gains see nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

import numpy as np
import pytest

from mdla_ir import run_float
from mdla_quant import QuantConfig, QuantError, quantize, run_int8
from mdla_quant.joint import ROUNDS, Measure, eliminate, simulated_sqnr
from mdla_quant.precision import Cost, choose, tensor_costs
from mdla_quant.sensitivity import Gain, Sensitivity, int16_grids, output_sqnr, simulate_a16
from mdla_quant.simulate import activation_grids, with_int8_weights
from tests.quant.test_sensitivity import inputs, mlp, widened

NOISE = {"a": 1.0, "b": 1.0, "c": 0.35, "d": 0.3, "e": 0.05}  # each tensor's error at int8
ELEMENTS = {"a": 10, "b": 10, "c": 10, "d": 10, "e": 60}


def paired(int16: Collection[str]) -> float:
    """An output whose error from `a` and `b` is the larger of the two (one masks the other:
    16 bits on either alone gain nothing), plus the others' errors."""
    pair = max(NOISE[t] for t in ("a", "b") if t not in int16) if {"a", "b"} - set(int16) else 0
    rest = sum(NOISE[t] for t in ("c", "d", "e") if t not in int16)
    return float(-10 * np.log10(pair + rest + 1e-3))


def costs() -> dict[str, Cost]:
    return {t: Cost(t, n, n, 0) for t, n in ELEMENTS.items()}


def test_elimination_finds_the_pair_per_tensor_gains_miss() -> None:
    budget = 0.3  # 30 of 100 elements: a + b + one of c, d
    picked = eliminate(paired, NOISE, costs(), budget)
    assert [c.tensor for c in picked] == ["a", "b", "c"]  # graph order; c costs more than d
    assert sum(c.share for c in picked) == pytest.approx(budget)
    assert all(c.gain_db > 0 for c in picked)  # each one's loss when dropped from the rest
    # alone, neither a nor b gains: the per-tensor greedy choice takes c, d and e's share
    base = paired(())
    found = Sensitivity(
        base, None, tuple(Gain(t, paired((t,)), paired((t,)) - base, None) for t in NOISE)
    )
    assert {g.tensor for g in found.gains if g.gain_db <= 0} == {"a", "b"}
    greedy = [c.tensor for c in choose(found, costs(), budget)]
    assert "a" not in greedy
    assert "b" not in greedy
    assert paired([c.tensor for c in picked]) > paired(greedy) + 4.0


def test_elimination_re_measures_each_round() -> None:
    calls: list[frozenset[str]] = []

    def counted(int16: Collection[str]) -> float:
        calls.append(frozenset(int16))
        return paired(int16)

    eliminate(counted, NOISE, costs(), 0.3)
    # round 1 from all int16 drops e (least loss per element: 60 of the 70 over budget);
    # round 2 measures a, b, c, d again and drops d; then the budget holds
    first, second = frozenset(NOISE), frozenset("abcd")
    assert calls == [
        first,
        *(first - {t} for t in "abcde"),
        second,
        *(second - {t} for t in "abcd"),
    ]
    assert ROUNDS > 2  # the budget, not the rounds, ended it


def test_a_budget_that_holds_everything_keeps_everything() -> None:
    picked = eliminate(paired, ["a", "b", "e"], costs(), 1.0)
    assert [c.tensor for c in picked] == ["a", "b", "e"]
    assert picked[0].gain_db == pytest.approx(paired(("a", "b", "e")) - paired(("b", "e")))


def test_on_a_graph_the_badly_ranged_tensor_and_its_reader_are_kept() -> None:
    """mlp's `h` with a 40x too wide int8 range: only int16 on `h` and on the FC reading it
    (`h2`, which then reads `h` at 16 bits) cures it; 64 of 90 elements fit 0.75."""
    graph = mlp()
    q = widened(quantize(graph, inputs(32, 1), QuantConfig(method="minmax")), "h", 40.0)
    measure = simulated_sqnr(graph, q, inputs(16, 9))
    picked = eliminate(measure, ["h", "h2", "logits"], tensor_costs(graph), 0.75)
    assert [c.tensor for c in picked] == ["h", "h2"]
    assert measure(["h", "h2"]) > measure(()) + 10.0
    with pytest.raises(QuantError, match="no held-out inputs"):
        simulated_sqnr(graph, q, [])


def test_refresh_measures_each_later_round_on_what_is_still_int16() -> None:
    """`refresh(kept)` replaces the measure before every round but the first (e.g. weights
    re-fit to the tensors still int16); the rounds then read only the new one."""
    made: list[frozenset[str]] = []
    used: list[int] = []

    def refresh(kept: list[str]) -> Measure:
        made.append(frozenset(kept))
        version = len(made)

        def measure(int16: Collection[str]) -> float:
            used.append(version)
            return paired(int16)

        return measure

    def first(int16: Collection[str]) -> float:
        used.append(0)
        return paired(int16)

    picked = eliminate(first, NOISE, costs(), 0.3, refresh=refresh)
    assert made == [frozenset("abcd")]  # round 2 only: the budget held after it
    assert used == [0] * 6 + [1] * 5
    assert [c.tensor for c in picked] == ["a", "b", "c"]


def test_the_simulated_sqnr_can_take_its_weights_from_another_quantization() -> None:
    """Grids from one int8 graph, weights from another: AdaRound changes only the weights,
    so the plain graph's grids with the AdaRound-ed weights measure as the AdaRound-ed graph."""
    graph, data, held = mlp(), inputs(32, 1), inputs(16, 9)
    plain = quantize(graph, data, QuantConfig(method="minmax"))
    ada = quantize(graph, data, QuantConfig(method="minmax", adaround=20))
    mixed = simulated_sqnr(graph, plain, held, weights=ada)
    for int16 in ((), ("h", "h2")):
        assert mixed(int16) == simulated_sqnr(graph, ada, held)(int16)
        assert mixed(int16) != simulated_sqnr(graph, plain, held)(int16)


def test_the_room_an_overshooting_round_leaves_is_filled_back() -> None:
    """Whole tensors overshoot: round one drops `z` (its int16 hurts) and `y`, round two `x`
    (50 elements for the 5 over budget) and lands at 15 %; `y` fits the 45 elements left and is
    put back; `z` fits too but is left out (it lowers the measured SQNR)."""
    noise = {"x": 0.2, "y": 0.05, "s": 0.05, "t": 0.3}
    sizes = {"x": 50, "y": 30, "s": 5, "t": 10, "z": 5}
    calls: list[frozenset[str]] = []

    def additive(int16: Collection[str]) -> float:
        calls.append(frozenset(int16))
        err = sum(v for t, v in noise.items() if t not in int16) + 0.05 * ("z" in int16)
        return float(-10 * np.log10(err + 1e-3))

    table = {t: Cost(t, n, n, 0) for t, n in sizes.items()}
    picked = eliminate(additive, sizes, table, 0.6)
    assert [c.tensor for c in picked] == ["y", "s", "t"]
    assert sum(c.share for c in picked) == pytest.approx(0.45)
    gain = additive(("y", "s", "t")) - additive(("s", "t"))
    assert picked[0].gain_db == pytest.approx(gain)  # y's gain as put back
    assert frozenset("styz") in calls  # z was tried and refused
    assert ROUNDS > 2


def test_a_clipping_method_s_int16_tensors_are_simulated_on_their_observed_range() -> None:
    """`quantize` gives an int16 tensor its observed range whatever the method; under entropy
    the int8 range of `h` clips an outlier input. The refit measure (weights, and now the 16x8
    grids, from the graph quantized with `h`, `h2` int16) simulates what `run_int8` of that
    graph computes; the 16x8 grid of the clipped int8 range would clip the outlier again."""
    graph = mlp()
    data = inputs(64, 1)
    data[5] = [data[5][0] * 5.0]  # one input far out: its values sit in h's tail
    config = QuantConfig(method="entropy")
    q = quantize(graph, data, config)
    wide = quantize(graph, data, dataclasses.replace(config, a16=("h", "h2")))
    observed, clipped = int16_grids(graph, wide)["h"], activation_grids(graph, q, ("h",))["h"]
    assert observed[0] > 2 * clipped[0]  # the observed range is over twice the clipped one
    held = [data[5]]
    exact = run_int8(wide, held[0])
    rounded = with_int8_weights(graph, wide)
    faithful = simulate_a16(rounded, q, held, ("h", "h2"), int16_grids(graph, wide))
    narrow = simulate_a16(rounded, q, held, ("h", "h2"))
    assert output_sqnr([exact], faithful) > output_sqnr([exact], narrow) + 10.0
    measure = simulated_sqnr(graph, q, held, weights=wide)
    assert measure(["h", "h2"]) == pytest.approx(output_sqnr([run_float(graph, held[0])], faithful))
