"""torch.where / masked_fill in general: SELECT(x, y, a, b), a where `x compare y` holds, else
b, for a comparison of two tensors (`x > y`, `x <= skip`), or branches that are other tensors
(`torch.where(x > 0, torch.sigmoid(x), y)`). A CPU partition's op (the MDLA has no comparison
or select): exact in int8, the comparison of the dequantized float32 values and each branch
requantized to the output's scale (mdla_quant/kernels/select.py).

Every operand takes the output's shape: a number or a constant is broadcast into a constant
of that shape; a computed tensor of another shape is refused (expand it first).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import fx

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.ops import OpKind

_FIX = "expand every tensor of a torch.where to its output's shape first (`expand_as`)"


def _operand(c: Ctx, a: Any, shape: tuple[int, ...], tag: str) -> str:
    node = c.node
    assert node is not None
    if not isinstance(a, fx.Node) or a not in c.refs:
        value = c.value(a)
        value = value.item() if hasattr(value, "item") else value
        if not isinstance(value, bool | int | float):
            raise Unsupported(f"a torch.where operand {value!r} that is not a tensor or number")
        return c.const(f"{node.name}.{tag}", np.full(shape, float(value), np.float32))
    name = c.refs[a]
    t = c.tensors[name]
    if tuple(t.shape) == shape:
        return name
    if t.data is None:
        raise Unsupported(f"a torch.where whose tensor of shape {list(t.shape)} broadcasts", _FIX)
    full = np.broadcast_to(np.asarray(t.data, np.float32), shape)
    return c.const(f"{node.name}.{tag}", np.ascontiguousarray(full))


def select(c: Ctx, x: Any, compare: str, y: Any, then: Any, other: Any) -> None:
    """SELECT(x, y, then, other) for the current node (every operand in its shape)."""
    shape = c.out_shape()
    tags = ("x", "y", "then", "else")
    ins = [_operand(c, v, shape, tag) for v, tag in zip((x, y, then, other), tags, strict=True)]
    if all(c.tensors[n].data is not None for n in ins[:2]):
        raise Unsupported("a torch.where whose condition compares two constants")
    c.emit(OpKind.SELECT, ins, compare=compare)
