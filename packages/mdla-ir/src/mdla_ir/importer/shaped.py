"""Emitting an intermediate op of a multi-op conversion (a SLICE before its RESHAPE, the 2-D
op between the reshapes of a 1-D layer): its output shape is given, not the fx node's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mdla_ir.graph import Op, Source, Tensor
from mdla_ir.importer.context import Ctx, source_line, target_name
from mdla_ir.ops import OpKind


def emit_shaped(
    c: Ctx, kind: OpKind, inputs: Sequence[str], out: Sequence[int], suffix: str, **attrs: Any
) -> str:
    """Append one op for the current node with a fresh output of shape `out`; its name."""
    node = c.node
    assert node is not None
    name_out = c.fresh(f"{node.name}.{suffix}", c.tensors)
    c.tensors[name_out] = Tensor(name_out, tuple(int(d) for d in out))
    name = c.fresh(f"{c.op_name(node)}.{suffix}", {o.name: None for o in c.ops})
    source = Source(node.name, target_name(node), source_line(node))
    c.ops.append(Op(kind, name, tuple(inputs), (name_out,), attrs, source))
    return name_out


def reshape_to(c: Ctx, x: str, shape: Sequence[int], suffix: str) -> str:
    """`x` as `shape` (a RESHAPE op; `x` itself when the shapes already agree)."""
    if tuple(c.tensors[x].shape) == tuple(shape):
        return x
    return emit_shaped(c, OpKind.RESHAPE, [x], shape, suffix, shape=tuple(int(d) for d in shape))
