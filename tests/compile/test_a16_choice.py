"""`mdla_compile.a16.choose_a16`: the float rewrites (equalization, high-bias absorption, which
read the calibration set) run once for the probe quantization and the sensitivity."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

import mdla_quant
from mdla_compile.a16 import choose_a16, split
from mdla_ir import Graph
from mdla_quant.precision import a16_candidates, choose, tensor_costs
from mdla_quant.sensitivity import sensitivity
from tests.quant.test_sensitivity import inputs, outlier_mlp

QUANTIZE = importlib.import_module("mdla_quant.quantize")  # the module, not the function


def test_auto_equalizes_the_float_graph_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real = QUANTIZE.equalize
    calls: list[str] = []

    def counted(graph: Graph) -> object:
        calls.append(graph.name)
        return real(graph)

    monkeypatch.setattr(QUANTIZE, "equalize", counted)
    config = mdla_quant.QuantConfig(method="minmax", equalize=True)
    picked = choose_a16(outlier_mlp(), inputs(64, 2), config, budget=0.5)
    assert len(calls) == 1
    monkeypatch.undo()
    # what quantizing the original graph with `equalize` and rewriting it again would choose
    graph, (fit, held) = outlier_mlp(), split(inputs(64, 2))
    probe = dataclasses.replace(config, a16=(), adaround=0, reconstruction="layer")
    q8 = mdla_quant.quantize(graph, fit, probe)
    allowed = [n for n in a16_candidates(graph) if n in q8.tensors]
    rounded = mdla_quant.float_rewrites(graph, fit, probe)
    found = sensitivity(rounded, q8, held, allowed, None, allowed)
    assert picked == choose(found, tensor_costs(graph), 0.5, allowed=allowed)
    assert picked  # something gains from 16 bits: the comparison is not of two empty choices
