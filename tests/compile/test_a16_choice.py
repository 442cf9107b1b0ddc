"""`mdla_compile.a16.choose_a16`: the float rewrites (equalization, high-bias absorption, which
read the calibration set) run once for the probe quantization and the sensitivity."""

from __future__ import annotations

import dataclasses
import importlib
import itertools
from typing import Any

import pytest

import mdla_quant
from mdla_compile.a16 import choose_a16, quarters, split
from mdla_ir import Graph
from mdla_quant.joint import eliminate, simulated_sqnr
from mdla_quant.precision import a16_candidates, choose, tensor_costs
from mdla_quant.sensitivity import sensitivity
from tests.quant.test_sensitivity import inputs, mlp, outlier_mlp

REWRITES = importlib.import_module("mdla_quant.rewrites")  # where quantize equalizes


def test_auto_equalizes_the_float_graph_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real = REWRITES.equalize
    calls: list[str] = []

    def counted(graph: Graph) -> object:
        calls.append(graph.name)
        return real(graph)

    monkeypatch.setattr(REWRITES, "equalize", counted)
    config = mdla_quant.QuantConfig(method="minmax", equalize=True)
    picked = choose_a16(outlier_mlp(), inputs(64, 2), config, budget=0.5)
    assert len(calls) == 1
    monkeypatch.undo()
    # what quantizing the original graph with `equalize` and rewriting it again would choose
    graph, (fit, held) = outlier_mlp(), split(inputs(64, 2))
    probe = dataclasses.replace(config, a16=())
    q8 = mdla_quant.quantize(graph, fit, probe)
    allowed = [n for n in a16_candidates(graph) if n in q8.tensors]
    rounded = mdla_quant.float_rewrites(graph, fit, probe)
    found = sensitivity(rounded, q8, held, allowed, None, allowed)
    assert picked == choose(found, tensor_costs(graph), 0.5, allowed=allowed)
    assert picked  # something gains from 16 bits: the comparison is not of two empty choices


def test_auto_measures_on_the_adarounded_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """With AdaRound on, the gains are measured on the int8 graph with the AdaRound-ed weights
    the compile keeps (16 bits on top of them), not on round-to-nearest weights."""
    seen: list[Graph] = []
    real = sensitivity

    def spied(graph: Graph, qgraph: Graph, *args: object, **kw: object) -> object:
        seen.append(qgraph)
        return real(graph, qgraph, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.import_module("mdla_compile.a16"), "sensitivity", spied)
    graph, data = outlier_mlp(), inputs(64, 2)
    config = mdla_quant.QuantConfig(method="minmax", adaround=20)
    choose_a16(graph, data, config, budget=0.5)
    (probed,) = seen
    assert probed.provenance.quant is not None
    assert probed.provenance.quant.adaround == 20
    fit, _ = split(data)
    ada = mdla_quant.quantize(graph, fit, dataclasses.replace(config, a16=()))
    nearest = mdla_quant.quantize(graph, fit, dataclasses.replace(config, adaround=0))
    weights = [n for n, t in ada.tensors.items() if t.data is not None and t.dtype == "int8"]
    assert all((probed.tensors[n].data == ada.tensors[n].data).all() for n in weights)
    assert any((probed.tensors[n].data != nearest.tensors[n].data).any() for n in weights)
    seen.clear()
    choose_a16(graph, data, dataclasses.replace(config, adaround=0), budget=0.5)
    assert seen[0].provenance.quant is not None
    assert seen[0].provenance.quant.adaround == 0  # without AdaRound: as before


def test_joint_eliminates_on_the_same_probe_and_held_out_part() -> None:
    """`joint`: the same split and probe quantization as `auto`, the choice by elimination."""
    graph, data = outlier_mlp(), inputs(64, 2)
    config = mdla_quant.QuantConfig(method="minmax")
    picked = choose_a16(graph, data, config, budget=0.5, joint=True)
    fit, held = split(data)
    q8 = mdla_quant.quantize(graph, fit, config)
    allowed = [n for n in a16_candidates(graph) if n in q8.tensors]
    expected = eliminate(simulated_sqnr(graph, q8, held), allowed, tensor_costs(graph), 0.5)
    assert picked == expected
    assert picked
    assert sum(c.share for c in picked) <= 0.5


def _quantize_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, tuple[str, ...]]]:
    """Each `mdla_quant.quantize` call's (AdaRound iterations, int16 tensors), in order."""
    real = mdla_quant.quantize
    calls: list[tuple[int, tuple[str, ...]]] = []

    def spied(graph: Graph, data: object, config: mdla_quant.QuantConfig, **kw: Any) -> Graph:
        calls.append((config.adaround, config.a16))
        return real(graph, data, config, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(mdla_quant, "quantize", spied)
    return calls


def test_refit_measures_on_weights_fit_with_every_candidate_int16(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`refit`: one AdaRound, with every candidate int16; the int8 grids of a plain probe.
    On mlp it keeps `h` where `joint`, on weights AdaRound fit to int8 activations, keeps
    `h2`."""
    graph, data = mlp(), inputs(64, 2)
    # the choices below were read off round-to-nearest weights
    config = mdla_quant.QuantConfig(method="minmax", adaround=20, weight_rounding="nearest")
    calls = _quantize_calls(monkeypatch)
    picked = choose_a16(graph, data, config, budget=0.5, refit=True)
    monkeypatch.undo()
    allowed = a16_candidates(graph)
    assert calls == [(0, ()), (20, tuple(allowed))]
    fit, held = split(data)
    grids = mdla_quant.quantize(graph, fit, dataclasses.replace(config, adaround=0))
    weights = mdla_quant.quantize(graph, fit, dataclasses.replace(config, a16=tuple(allowed)))
    measure = simulated_sqnr(graph, grids, held, weights=weights)
    assert picked == eliminate(measure, allowed, tensor_costs(graph), 0.5)
    int8_fit = simulated_sqnr(graph, mdla_quant.quantize(graph, fit, config), held)
    assert measure(allowed) != int8_fit(allowed)  # other weights: not today's `joint` probe
    assert [c.tensor for c in picked] == ["h", "logits"]
    joint = choose_a16(graph, data, config, budget=0.5, joint=True)
    assert [c.tensor for c in joint] == ["h2", "logits"]


def test_refit_without_adaround_is_joint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without AdaRound the weights do not depend on the activations' precision: no second
    probe, the `joint` choice."""
    graph, data = outlier_mlp(), inputs(64, 2)
    config = mdla_quant.QuantConfig(method="minmax")
    calls = _quantize_calls(monkeypatch)
    picked = choose_a16(graph, data, config, budget=0.5, refit=True)
    assert calls == [(0, ())]
    monkeypatch.undo()
    assert picked == choose_a16(graph, data, config, budget=0.5, joint=True)


def test_every_round_fits_adaround_again_to_the_tensors_still_int16(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    graph, data = outlier_mlp(), inputs(64, 2)
    config = mdla_quant.QuantConfig(method="minmax", adaround=5)
    calls = _quantize_calls(monkeypatch)
    picked = choose_a16(graph, data, config, budget=0.2, refit=True, rounds="every_round")
    allowed = tuple(a16_candidates(graph))
    assert calls[:2] == [(0, ()), (5, allowed)]
    rounds = [a16 for _, a16 in calls[2:]]
    assert rounds  # the budget took more than one round
    shrinking = [allowed, *rounds]
    assert all(set(b) < set(a) for a, b in itertools.pairwise(shrinking))
    assert {c.tensor for c in picked} <= set(allowed)
    assert 0 < sum(c.share for c in picked) <= 0.2  # the last round's room filled back


def test_folds_fit_on_the_whole_set_and_score_each_round_on_the_next_quarter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`rounds="folds"`: the probe quantizations read all 64 inputs (not the first 48), and
    round k scores on inputs 16k..16k+15, on the one AdaRound fit with every candidate int16."""
    graph, data = outlier_mlp(), inputs(64, 2)
    config = mdla_quant.QuantConfig(method="minmax", adaround=5)
    real_quantize, real_sqnr = mdla_quant.quantize, simulated_sqnr
    fits: list[tuple[int, int]] = []
    scored: list[list[list[object]]] = []

    def quantize(
        graph: Graph, data: list[object], config: mdla_quant.QuantConfig, **kw: Any
    ) -> Graph:
        fits.append((len(data), config.adaround))
        return real_quantize(graph, data, config, **kw)  # type: ignore[arg-type]

    def sqnr(graph: Graph, q: Graph, held: list[list[object]], weights: Graph) -> object:
        scored.append(held)
        return real_sqnr(graph, q, held, weights=weights)  # type: ignore[arg-type]

    monkeypatch.setattr(mdla_quant, "quantize", quantize)
    monkeypatch.setattr(importlib.import_module("mdla_compile.a16"), "simulated_sqnr", sqnr)
    picked = choose_a16(graph, data, config, budget=0.5, refit=True, rounds="folds")
    assert fits == [(64, 0), (64, 5)]
    assert len(scored) > 1  # the budget took more than one round
    for k, held in enumerate(scored):
        assert [x[0].tolist() for x in held] == [x[0].tolist() for x in data[16 * k : 16 * k + 16]]
    assert 0 < sum(c.share for c in picked) <= 0.5


def test_quarters_are_contiguous_and_never_empty() -> None:
    assert quarters([[k] for k in range(8)]) == [[[0], [1]], [[2], [3]], [[4], [5]], [[6], [7]]]
    assert quarters([[0], [1]]) == [[[0]], [[0]], [[1]], [[1]]]
