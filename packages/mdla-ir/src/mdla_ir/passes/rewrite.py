"""A small helper for passes that walk the ops once and emit a new op list.

`Rewriter` keeps the new ops, a table of tensor aliases (uses of a removed op's output are
redirected to another tensor) and the tensor table; `finish()` returns the new graph with
unused tensors dropped and the honest `changed` flag.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_ir.graph import Graph, Op, Tensor, same_graph


@dataclass(frozen=True, slots=True)
class PassResult:
    """A pass's output graph, whether it differs from the input, and (for a pass made of
    rules, like a legalize table) which rules fired how often: the pass manager's trace."""

    graph: Graph
    changed: bool
    fired: Mapping[str, int] = field(default_factory=dict)


class Rewriter:
    def __init__(self, graph: Graph) -> None:
        self.old = graph
        self.tensors: dict[str, Tensor] = dict(graph.tensors)
        self.ops: list[Op] = []
        self.alias: dict[str, str] = {}
        self._producer: dict[str, int] = {}
        self._uses = {name: len(users) for name, users in graph.consumers().items()}

    def __iter__(self) -> Iterator[Op]:
        """The old graph's ops, with inputs already redirected through the alias table (an op
        none of whose inputs is redirected is itself: ops are immutable, and a copy cost a
        dataclass replace and an attribute check per op and pass)."""
        for op in self.old.ops:
            inputs = tuple(self.resolve(n) for n in op.inputs)
            yield op if inputs == op.inputs else op.with_(inputs=inputs)

    def resolve(self, name: str) -> str:
        while name in self.alias:
            name = self.alias[name]
        return name

    def emit(self, op: Op) -> None:
        for out in op.outputs:
            self._producer[out] = len(self.ops)
        self.ops.append(op)

    def producer(self, name: str) -> Op | None:
        index = self._producer.get(name)
        return None if index is None else self.ops[index]

    def replace_producer(self, name: str, op: Op) -> None:
        """Swap the already-emitted op that produced `name` for `op`."""
        index = self._producer.pop(name)
        for out in self.ops[index].outputs:
            self._producer.pop(out, None)
        self.ops[index] = op
        for out in op.outputs:
            self._producer[out] = index

    def remove_producer(self, name: str) -> Op:
        """Take back the already-emitted op that produced `name`."""
        op = self.ops.pop(self._producer[name])
        self._producer = {out: i for i, o in enumerate(self.ops) for out in o.outputs}
        return op

    def sole_use(self, name: str) -> bool:
        """True when `name` has exactly one consumer and is not a graph output."""
        return self._uses.get(name, 0) == 1 and name not in self.old.outputs

    def add_const(self, name: str, data: np.ndarray[Any, Any]) -> str:
        base, i = name, 1
        while name in self.tensors:
            name, i = f"{base}.{i}", i + 1
        self.tensors[name] = Tensor(name, tuple(data.shape), str(data.dtype), data=data)
        return name

    def finish(self) -> PassResult:
        outputs = tuple(self.resolve(n) for n in self.old.outputs)
        boundary = {self.resolve(n): perm for n, perm in self.old.boundary.items()}
        used = {n for op in self.ops for n in (*op.inputs, *op.outputs)}
        used |= set(outputs) | set(self.old.inputs)
        tensors = {n: t for n, t in self.tensors.items() if n in used}
        graph = self.old.with_(
            ops=tuple(self.ops), tensors=tensors, outputs=outputs, boundary=boundary
        )
        return PassResult(graph, not same_graph(graph, self.old))
