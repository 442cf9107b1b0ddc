"""The FP32 reference outputs a sweep worker keeps between its tasks: the same graph on the
same inputs runs the float interpreter once; another constant or another input runs it again."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import mdla_compile
import mdla_ir
from mdla_compile import CompileOptions
from tests.workbench.conftest import TINY
from workbench.sweep import reference


def test_the_same_graph_and_inputs_run_once_and_a_change_runs_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    graph = mdla_compile.compile(CompileOptions(TINY, calib="random", count=1)).source.graph
    rng = np.random.default_rng(0)
    inputs = [[rng.uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)] for _ in range(2)]
    calls: list[int] = []
    real = mdla_ir.run_float

    def counted(g: mdla_ir.Graph, xs: Any) -> Any:
        calls.append(1)
        return real(g, xs)

    monkeypatch.setattr(mdla_ir, "run_float", counted)
    first = reference.fp32_outputs(graph, inputs)
    again = reference.fp32_outputs(graph, [[x.copy() for x in xs] for xs in inputs])
    assert len(calls) == 2  # the second call: equal bytes, no run
    assert again is first
    for got, xs in zip(first, inputs, strict=True):
        np.testing.assert_array_equal(got[0], np.asarray(real(graph, xs)[0]))
    name = next(n for n, t in graph.tensors.items() if t.data is not None and t.data.size > 1)
    changed = dict(graph.tensors)
    data = graph.tensors[name].data
    assert data is not None
    changed[name] = dataclasses.replace(graph.tensors[name], data=data * 2)
    other = reference.fp32_outputs(graph.with_(tensors=changed), inputs)
    assert len(calls) == 4
    assert not np.array_equal(other[0][0], first[0][0])
    reference.fp32_outputs(graph, inputs[:1])
    assert len(calls) == 5
