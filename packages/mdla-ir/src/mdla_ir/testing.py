"""Shared test helpers: the graph builder (`mdla_ir.builder`) and the one checker every pass is
tested with."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mdla_ir.builder import GraphBuilder as GraphBuilder  # re-exported: tests import it here
from mdla_ir.graph import Graph, same_graph
from mdla_ir.interp import run_float
from mdla_ir.passes.rewrite import PassResult
from mdla_ir.verify import verify


def random_inputs(graph: Graph, seed: int = 0) -> list[np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(graph.model_shape(n)).astype(np.float32) for n in graph.inputs]


def relative_error(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any]) -> float:
    """max |got - want| / max |want| (0 when both are all zero)."""
    scale = float(np.abs(want).max())
    diff = float(np.abs(got.astype(np.float64) - want).max())
    return diff / scale if scale else diff


def check_pass(
    fn: Callable[[Graph], PassResult],
    graph: Graph,
    delta: Mapping[str, int] | None = None,
    rtol: float = 1e-5,
    inputs: Sequence[np.ndarray[Any, Any]] | None = None,
) -> Graph:
    """The pass contract: verified output, op-count delta, honest `changed`, idempotent, exact.

    `delta` maps op kind names to the expected change in their count (e.g. {"BATCH_NORM": -1}).
    """
    result = fn(graph)
    new = verify(result.graph)
    assert result.changed == (not same_graph(graph, new)), "`changed` flag is not honest"
    if delta is not None:
        before, after = graph.count(), new.count()
        got = {k: after.get(k, 0) - before.get(k, 0) for k in before.keys() | after.keys()}
        got = {k: v for k, v in got.items() if v}
        assert got == {k: v for k, v in delta.items() if v}, f"op delta {got} != {dict(delta)}"
    again = fn(new)
    assert not again.changed, "pass is not idempotent: a second run changed the graph"
    assert same_graph(again.graph, new), "pass is not idempotent: the graph differs"
    xs = list(inputs) if inputs is not None else random_inputs(graph)
    for want, got_ in zip(run_float(graph, xs), run_float(new, xs), strict=True):
        err = relative_error(got_, want)
        assert err <= rtol, f"pass changed the float output: relative error {err:.3g} > {rtol}"
    return new
