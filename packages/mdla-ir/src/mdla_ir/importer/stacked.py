"""`torch.stack`, and a reduction over the axis a stack made: an elementwise chain.

`torch.stack(maps).sum(0)` (an FPN's merge; `.mean(0)`, `.amax(0)`, `.amin(0)` alike) reduces
over the axis the stack created, which is the batch axis when it is 0: no reduction op can hold
that, but it is only the elementwise sum (maximum, minimum) of the stacked tensors, which the
MDLA maps: an ADD chain (MUL by 1/n after it for a mean; max/min as `pairwise` composes them).
The stack is found on the fx path (`torch.stack`), in an exported program (`aten.stack`) and
in its decomposition (`aten.cat` along d, then a view that splits d into (n, size)). Other
reduced axes are reduced per piece first; the stack itself is left unused (dead ops go).

A stack on its own is one RESHAPE per piece (the new axis of size 1) and a CONCATENATION.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import fx

from mdla_ir.importer.context import Ctx
from mdla_ir.importer.pairwise import elementwise_extreme
from mdla_ir.importer.shaped import emit_shaped, reshape_to
from mdla_ir.ops import OpKind

aten = torch.ops.aten

_STACKS = (torch.stack, aten.stack.default)
_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)
_CATS = (torch.cat, torch.concat, aten.cat.default)


def _pieces_and_dim(node: fx.Node) -> tuple[list[Any], int]:
    args: dict[str, Any] = dict(zip(("tensors", "dim"), node.args, strict=False))
    args |= dict(node.kwargs)
    return list(args["tensors"]), int(args.get("dim", 0))


def _shape(node: Any) -> tuple[int, ...] | None:
    meta: Any = node.meta.get("tensor_meta") if isinstance(node, fx.Node) else None
    return tuple(int(d) for d in meta.shape) if hasattr(meta, "shape") else None


def stacked(c: Ctx, x: Any) -> tuple[list[Any], int] | None:
    """When `x` is a stack of same-shape tensors along d: (the tensors, d); else None."""
    if not isinstance(x, fx.Node) or x.op != "call_function":
        return None
    if x.target in _STACKS:
        pieces, d = _pieces_and_dim(x)
    elif x.target in _VIEWS and isinstance(x.args[0], fx.Node) and x.args[0].target in _CATS:
        pieces, d = _pieces_and_dim(x.args[0])
    else:
        return None
    shapes = {_shape(p) for p in pieces}
    if len(shapes) != 1 or None in shapes or not all(c.is_tensor(p) for p in pieces):
        return None
    (piece,) = shapes
    assert piece is not None
    d %= len(piece) + (x.target in _STACKS)
    if x.target in _VIEWS and _shape(x) != (*piece[:d], len(pieces), *piece[d:]):
        return None  # a cat, then a view that is not the stack's split
    return pieces, d


def _axes(dim: Any, rank: int) -> tuple[int, ...]:
    dims = range(rank) if dim is None or dim == [] or dim == () else dim
    dims = [dims] if isinstance(dims, int) else dims
    return tuple(sorted({int(d) % rank for d in dims}))


def _chain(c: Ctx, kind: OpKind, parts: list[str], shape: tuple[int, ...]) -> str:
    """The elementwise sum / maximum / minimum of `parts` (same shape)."""
    acc = parts[0]
    for i, part in enumerate(parts[1:]):
        if kind is OpKind.REDUCE_SUM or kind is OpKind.MEAN:
            acc = emit_shaped(c, OpKind.ADD, [acc, part], shape, f"merge{i}", fuse="NONE")
            continue
        top = kind is OpKind.REDUCE_MAX
        acc = elementwise_extreme(c, acc, part, top, f"merge{i}", last=False, shape=shape)
    return acc


def over_stack(c: Ctx, kind: OpKind, x: Any, dim: Any, keep: bool) -> bool:
    """Reduce (`kind`: REDUCE_SUM/MAX/MIN or MEAN) a stack over its stacked axis (and others)
    as an elementwise chain of its pieces; False (nothing emitted) when `x` is no stack or
    `dim` leaves the stacked axis alone."""
    found = stacked(c, x)
    if found is None:
        return False
    pieces, d = found
    piece = c.tensors[c.ref(pieces[0])].shape
    axes = _axes(dim, len(piece) + 1)
    if d not in axes:
        return False
    rest = tuple(a if a < d else a - 1 for a in axes if a != d)
    kept = tuple(1 if i in rest else s for i, s in enumerate(piece))
    parts = [_reduced(c, kind, c.ref(p), rest, kept, i) for i, p in enumerate(pieces)]
    total = _chain(c, kind, parts, kept)
    if kind is OpKind.MEAN:
        assert c.node is not None
        scale = c.const(f"{c.node.name}.scale", np.asarray(1.0 / len(pieces), np.float32))
        total = emit_shaped(c, OpKind.MUL, [total, scale], kept, "mean", fuse="NONE")
    out = _shape(c.node)
    assert out is not None
    assert c.node is not None
    c.refs[c.node] = reshape_to(c, total, out, "shape")
    return True


def _reduced(
    c: Ctx, kind: OpKind, x: str, rest: tuple[int, ...], kept: tuple[int, ...], i: int
) -> str:
    """One piece reduced over the other axes (kept as size 1); itself when there are none."""
    if not rest or all(c.tensors[x].shape[a] == 1 for a in rest):
        return x
    return emit_shaped(c, kind, [x], kept, f"piece{i}", axes=rest, keepdims=True)


def stack(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.stack / aten.stack (tensors, dim=0): each tensor with a new axis of size 1 at
    dim, then their CONCATENATION along it."""
    a = dict(zip(("tensors", "dim"), args, strict=False)) | kw
    shape = c.tensors[c.ref(a["tensors"][0])].shape
    d = int(c.value(a.get("dim", 0))) % (len(shape) + 1)
    new = (*shape[:d], 1, *shape[d:])
    parts = [reshape_to(c, c.ref(t), new, f"unsqueeze{i}") for i, t in enumerate(a["tensors"])]
    c.emit(OpKind.CONCATENATION, parts, axis=d)
