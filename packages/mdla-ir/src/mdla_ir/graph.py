"""IR records: Graph, Tensor, Op and Source, all frozen.

A graph is flat: named tensors (activations, or constants carrying their data), ops in
topological order referring to tensors by name, and the graph's inputs and outputs. `layout`
says where the channel axis of the spatial ops is ("NCHW" as imported from PyTorch, "NHWC" on
the device); `boundary` maps each graph input/output to the permutation from the model's own
layout to the graph's, so callers always exchange tensors in the model's layout. A permutation
longer than the tensor's rank means the permuted model tensor's leading unit dims are squeezed
(a clip (1, C, T, H, W) held on the device as frames (T, H, W, C): perm (0, 2, 3, 4, 1)).
`provenance` is the typed compile record (`mdla_ir.provenance`), filled floor by floor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_ir.attrs import Attrs, fuse_of
from mdla_ir.ops import OpKind
from mdla_ir.provenance import Provenance
from mdla_ir.schema import record_for


@dataclass(frozen=True, slots=True)
class QuantParams:
    """Affine int8/int32 quantization: real = scale * (q - zero_point), per tensor or channel."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    channel_dim: int | None = None

    @property
    def per_channel(self) -> bool:
        return self.channel_dim is not None


@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    data: np.ndarray[Any, Any] | None = field(default=None, compare=False, repr=False)
    quant: QuantParams | None = None

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True, slots=True)
class Source:
    """Where an op came from: the fx node, what it called, the model's source line, and (from
    torch.export) the qualified name and class of the module it ran in."""

    node: str
    target: str = ""
    line: str = ""
    module: str = ""  # "features.3.conv.1 (Conv2dNormActivation)"; "" when not known

    def __str__(self) -> str:
        where = f" in {self.module}" if self.module else ""
        return f"{self.node} ({self.target}){where} at {self.line}" if self.line else self.node


@dataclass(frozen=True, slots=True, init=False)
class Op:
    """One op. `attrs` is the frozen record of the op's family (`mdla_ir.schema`, `attrs.py`);
    a mapping given instead (importers and rules build dicts) is parsed into that record here,
    so a malformed attribute fails at construction with an `AttrError` naming the op."""

    kind: OpKind
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Attrs
    source: Source | None

    def __init__(
        self,
        kind: OpKind,
        name: str,
        inputs: tuple[str, ...],
        outputs: tuple[str, ...],
        attrs: Attrs | Mapping[str, Any] | None = None,
        source: Source | None = None,
    ) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "inputs", inputs)
        object.__setattr__(self, "outputs", outputs)
        object.__setattr__(self, "attrs", record_for(kind, name, attrs))
        object.__setattr__(self, "source", source)

    def with_(self, **changes: Any) -> Op:
        return dataclasses.replace(self, **changes)

    @property
    def fuse(self) -> str:
        """The fused activation (a FUSE_CODES name; "NONE" for families without one)."""
        return fuse_of(self.attrs)

    @property
    def label(self) -> str:
        """Kind plus fused activation, as printed in op tables (`CONV_2D+RELU6`)."""
        fuse = self.fuse
        return self.kind.name if fuse == "NONE" else f"{self.kind.name}+{fuse}"


@dataclass(frozen=True, slots=True)
class Graph:
    name: str
    tensors: Mapping[str, Tensor]
    ops: tuple[Op, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    layout: str = "NCHW"
    boundary: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    provenance: Provenance = field(default_factory=Provenance)

    def with_(self, **changes: Any) -> Graph:
        return dataclasses.replace(self, **changes)

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def const(self, name: str) -> np.ndarray[Any, Any]:
        data = self.tensors[name].data
        if data is None:
            raise KeyError(f"tensor `{name}` is not a constant")
        return data

    def producers(self) -> dict[str, Op]:
        return {out: op for op in self.ops for out in op.outputs}

    def consumers(self) -> dict[str, list[Op]]:
        users: dict[str, list[Op]] = {}
        for op in self.ops:
            for name in op.inputs:
                users.setdefault(name, []).append(op)
        return users

    def op(self, name: str) -> Op:
        for op in self.ops:
            if op.name == name:
                return op
        raise KeyError(f"no op named `{name}` in graph `{self.name}`")

    def count(self) -> dict[str, int]:
        """Op labels and how often each occurs."""
        counts: dict[str, int] = {}
        for op in self.ops:
            counts[op.kind.name] = counts.get(op.kind.name, 0) + 1
        return counts

    @property
    def num_params(self) -> int:
        used = {name for op in self.ops for name in op.inputs}
        return sum(t.size for t in self.tensors.values() if t.is_const and t.name in used)

    def model_shape(self, name: str) -> tuple[int, ...]:
        """Shape of a boundary tensor in the model's own layout."""
        shape = self.tensors[name].shape
        perm = self.boundary.get(name)
        if perm is None:
            return shape
        shape = (1,) * (len(perm) - len(shape)) + shape  # squeezed leading unit dims
        inverse = np.argsort(perm)
        return tuple(shape[i] for i in inverse)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __len__(self) -> int:
        return len(self.ops)

    def __str__(self) -> str:
        return format_table(self)


def _shape(shape: Iterable[int]) -> str:
    return "×".join(str(d) for d in shape) or "scalar"


def format_table(graph: Graph) -> str:
    """The op table: index, kind (with fused activation), output shape, source name."""
    ins = ", ".join(f"{n}[{_shape(graph.tensors[n].shape)}]" for n in graph.inputs)
    outs = ", ".join(f"{n}[{_shape(graph.tensors[n].shape)}]" for n in graph.outputs)
    lines = [
        f"graph {graph.name}: {len(graph.ops)} ops, {graph.num_params:,} parameters, "
        f"layout {graph.layout}",
        f"  inputs: {ins}",
        f"  outputs: {outs}",
    ]
    rows = [("#", "kind", "output shape", "source")]
    for i, op in enumerate(graph.ops):
        shape = _shape(graph.tensors[op.outputs[0]].shape) if op.outputs else "-"
        rows.append((str(i), op.label, shape, op.name))
    widths = [max(len(r[c]) for r in rows) for c in range(3)]
    lines += [
        f"  {r[0]:>{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}".rstrip()
        for r in rows
    ]
    lines.append(
        f"  {len(graph.ops)} ops: "
        + ", ".join(f"{k} {v}" for k, v in sorted(graph.count().items(), key=lambda kv: -kv[1]))
    )
    return "\n".join(lines)


def same_graph(a: Graph, b: Graph) -> bool:
    """Structural equality, constants compared by value (used for honest `changed` flags)."""
    if (a.ops, a.inputs, a.outputs, a.layout, dict(a.boundary)) != (
        b.ops,
        b.inputs,
        b.outputs,
        b.layout,
        dict(b.boundary),
    ):
        return False
    if a.tensors.keys() != b.tensors.keys():
        return False
    for name, ta in a.tensors.items():
        tb = b.tensors[name]
        if ta != tb:
            return False
        if ta.data is not None and tb.data is not None and ta.data is not tb.data:
            if not np.array_equal(ta.data, tb.data):
                return False
        elif (ta.data is None) != (tb.data is None):
            return False
    return True
