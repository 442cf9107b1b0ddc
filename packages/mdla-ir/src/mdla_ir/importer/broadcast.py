"""Converters for explicit broadcasts: `expand`, `expand_as`, `broadcast_to`, `repeat` (and
ATen's `expand`, `repeat`).

Where every reader of the result is an elementwise ADD/SUB/MUL/DIV that would broadcast the
unexpanded tensor to the same shape, nothing is emitted: the readers take the tensor as it
is (the MDLA broadcasts those operands). Otherwise the copies are materialized exactly: one
CONCATENATION of copies of the tensor per axis it is expanded or tiled along.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import torch
from torch import fx

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.ops import OpKind

aten = torch.ops.aten
_BINARY = {
    operator.add, operator.sub, operator.mul, operator.truediv, operator.iadd, operator.imul,
    torch.add, torch.sub, torch.mul, torch.div,
    aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor,
    "add", "sub", "mul", "div",
}  # fmt: skip


def _shape_of(a: Any) -> tuple[int, ...]:
    if isinstance(a, fx.Node):
        shape = getattr(a.meta.get("val", a.meta.get("tensor_meta")), "shape", ())
        return tuple(int(d) for d in shape)
    return tuple(a.shape) if isinstance(a, torch.Tensor) else ()


def _folds(node: fx.Node, small: tuple[int, ...]) -> bool:
    """Every reader broadcasts `small` to what it would broadcast the expanded tensor to."""
    for user in node.users:
        if user.target not in _BINARY or len(user.args) < 2 or user.kwargs.get("alpha", 1) != 1:
            return False
        other = user.args[1] if user.args[0] is node else user.args[0]
        want = np.broadcast_shapes(_shape_of(node), _shape_of(other))
        if np.broadcast_shapes(small, _shape_of(other)) != want:
            return False
    return bool(node.users)


def _tile(c: Ctx, x: str, counts: tuple[int, ...]) -> None:
    """CONCATENATION of `counts[d]` copies along each axis d (the last one into the node)."""
    axes = [d for d, n in enumerate(counts) if n > 1]
    if not axes:
        c.emit(OpKind.IDENTITY, [x])
        return
    shape = list(c.tensors[x].shape)
    for d in axes[:-1]:
        shape[d] *= counts[d]
        x = emit_shaped(c, OpKind.CONCATENATION, [x] * counts[d], shape, f"tile{d}", axis=d)
    c.emit(OpKind.CONCATENATION, [x] * counts[axes[-1]], axis=axes[-1])


def _broadcast(c: Ctx, x: Any, target: tuple[int, ...]) -> None:
    small = c.tensors[c.ref(x)].shape
    if len(small) != len(target):
        raise Unsupported(
            f"an expand from rank {len(small)} to rank {len(target)}",
            "unsqueeze to the full rank first (x[:, :, None, None].expand(...))",
        )
    node = c.node
    assert node is not None
    if _folds(node, small):
        c.refs[node] = c.ref(x)
        return
    _tile(c, c.ref(x), tuple(t // s if s == 1 else 1 for s, t in zip(small, target, strict=True)))


def _target(c: Ctx) -> tuple[int, ...]:
    assert c.node is not None
    return _shape_of(c.node)


def expand(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """x.expand(*sizes) / expand_as(other) / torch.broadcast_to / aten.expand."""
    _broadcast(c, args[0] if args else kw["input"], _target(c))


def repeat(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """x.repeat(*repeats) / aten.repeat: a broadcast where it only copies size-one axes, else
    the tiles concatenated."""
    x = c.ref(args[0])
    small = c.tensors[x].shape
    target = _target(c)
    if len(target) != len(small):
        raise Unsupported(
            f"a repeat that adds axes (rank {len(small)} to {len(target)})",
            "unsqueeze to the full rank first, then repeat",
        )
    node = c.node
    assert node is not None
    if all(s == 1 or s == t for s, t in zip(small, target, strict=True)) and _folds(node, small):
        c.refs[node] = x
        return
    _tile(c, x, tuple(t // s for s, t in zip(small, target, strict=True)))
