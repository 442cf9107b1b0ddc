"""A graph built op by op, output shapes from the shape rules: for tests, and for the product
modules that make small graphs (`mdla_quant.a16_cases`); `mdla_ir.testing` re-exports it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdla_ir.graph import Graph, Op, Tensor
from mdla_ir.ops import OpKind
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
