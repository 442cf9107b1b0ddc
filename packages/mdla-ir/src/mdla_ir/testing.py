"""Shared test helpers: a small graph builder and the one checker every pass is tested with."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mdla_ir.graph import Graph, Op, Tensor, same_graph
from mdla_ir.interp import run_float
from mdla_ir.ops import OpKind
from mdla_ir.passes.rewrite import PassResult
from mdla_ir.shapes import infer
from mdla_ir.verify import verify


class GraphBuilder:
    """Build a graph op by op; output shapes come from the shape rules unless given."""

    def __init__(self, name: str = "test", layout: str = "NCHW", seed: int = 0) -> None:
        self.name, self.layout = name, layout
        self.tensors: dict[str, Tensor] = {}
        self.ops: list[Op] = []
        self.inputs: list[str] = []
        self.rng = np.random.default_rng(seed)

    def input(self, name: str, shape: Sequence[int]) -> str:
        self.tensors[name] = Tensor(name, tuple(shape))
        self.inputs.append(name)
        return name

    def const(self, name: str, data: np.ndarray[Any, Any] | Sequence[int]) -> str:
        """A constant: given data, or a random float32 array of the given shape."""
        if not isinstance(data, np.ndarray):
            data = self.rng.standard_normal(tuple(data)).astype(np.float32)
        self.tensors[name] = Tensor(name, tuple(data.shape), str(data.dtype), data=data)
        return name

    def op(
        self,
        kind: OpKind,
        inputs: Sequence[str],
        name: str | None = None,
        out_shape: Sequence[int] | None = None,
        **attrs: Any,
    ) -> str:
        name = name or f"{kind.name.lower()}_{len(self.ops)}"
        if out_shape is None:
            shapes = infer(kind, attrs, [self.tensors[i].shape for i in inputs], self.layout)
            if shapes is None:
                raise ValueError(f"no shape rule for {kind.name}: pass out_shape=")
            out_shape = shapes[0]
        self.tensors[name] = Tensor(name, tuple(out_shape))
        self.ops.append(Op(kind, name, tuple(inputs), (name,), attrs))
        return name

    def build(self, *outputs: str) -> Graph:
        return verify(
            Graph(
                self.name,
                dict(self.tensors),
                tuple(self.ops),
                tuple(self.inputs),
                tuple(outputs),
                layout=self.layout,
            )
        )


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
