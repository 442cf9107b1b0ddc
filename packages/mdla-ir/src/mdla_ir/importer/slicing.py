"""Converters for slicing: `Tensor.chunk` / `torch.chunk`, `torch.split` / `Tensor.split`,
`unbind` (each piece a SLICE of length 1 and a RESHAPE dropping the axis), the
`operator.getitem` that picks a piece of them or slices a tensor (`x[:, :c]`), and `narrow`.

A chunk or split emits nothing: fx gives it a tuple whose pieces are picked by getitem nodes,
and each pick becomes one SLICE (begin, size per axis) of the chunked tensor. A tensor slice
with unit steps is a SLICE too (with steps a STRIDED_SLICE, `strided.py`); an integer index is
a SLICE of length 1 and a RESHAPE dropping that axis. `mdla_legalize` turns channel SLICEs
into exact 1×1 selection convolutions.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.importer.strided import axis_of, strided_slice
from mdla_ir.ops import OpKind

_SPLITS = {torch.chunk, torch.split, torch.unbind}


def _is_split(node: Any) -> bool:
    if not isinstance(node, fx.Node):
        return False
    if node.op == "call_method":
        return node.target in ("chunk", "split", "unbind")
    return node.op == "call_function" and node.target in _SPLITS


def _split_dim(c: Ctx, node: fx.Node) -> int:
    if node.target in ("chunk", torch.chunk) or node.target in ("split", torch.split):
        dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    elif node.target in ("unbind", torch.unbind):
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    else:
        raise Unsupported(f"{node.target} with indices")
    return int(c.value(dim))


def split_pieces(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """chunk/split: checked here, emitted piece by piece by `getitem`."""
    node = c.node
    assert node is not None
    if not c.is_tensor(args[0]):
        raise Unsupported("chunk/split of something other than a traced tensor")
    _split_dim(c, node)


def getitem(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    src, index = args[0], args[1]
    if _is_split(src):
        if not isinstance(c.value(index), int):
            raise Unsupported("a slice of the pieces of a chunk/split (pick them one by one)")
        _piece(c, src, int(c.value(index)))
    elif c.is_tensor(src):
        _tensor_slice(c, src, c.value(index))
    else:
        raise Unsupported("indexing something other than a tensor or a chunk/split")


def _piece(c: Ctx, split: fx.Node, i: int) -> None:
    pieces = c.values.get(split)
    if not isinstance(pieces, tuple | list):
        raise Unsupported(f"`{split.name}` has no recorded pieces")
    x = split.args[0]
    shape = c.tensors[c.ref(x)].shape
    dim = _split_dim(c, split) % len(shape)
    unbound = split.target in ("unbind", torch.unbind)
    sizes = [1 if unbound else int(p.shape[dim]) for p in pieces]
    i %= len(sizes)
    begin = [0] * len(shape)
    begin[dim] = sum(sizes[:i])
    size = list(shape)
    size[dim] = sizes[i]
    if not unbound:
        c.emit(OpKind.SLICE, [c.ref(x)], begin=tuple(begin), size=tuple(size))
        return
    one = emit_shaped(
        c, OpKind.SLICE, [c.ref(x)], size, "slice", begin=tuple(begin), size=tuple(size)
    )
    c.emit(OpKind.RESHAPE, [one], shape=tuple(size[:dim] + size[dim + 1 :]))


def _tensor_slice(c: Ctx, x: Any, index: Any) -> None:
    shape = c.tensors[c.ref(x)].shape
    items = list(index) if isinstance(index, tuple) else [index]
    if any(i is None for i in items):
        raise Unsupported("indexing with None (unsqueeze it instead)")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    items += [slice(None)] * (len(shape) - len(items))
    axes: list[tuple[int, int, int]] = []
    dropped = []
    for axis, (item, d) in enumerate(zip(items, shape, strict=True)):
        item = c.value(item) if not isinstance(item, slice) else item
        if isinstance(item, int):
            axes.append((item % d, 1, 1))
            dropped.append(axis)
        elif isinstance(item, slice):
            start, stop, step = (c.value(v) for v in (item.start, item.stop, item.step))
            axes.append(axis_of(start, stop, step, d))
        else:
            raise Unsupported(f"index {item!r} (only slices and integers import)")
    if any(s != 1 for _, _, s in axes):
        strided_slice(c, x, axes, drop=bool(dropped))
        return
    begin, size = [a[0] for a in axes], [a[1] for a in axes]
    if not dropped and all(a == (0, d, 1) for a, d in zip(axes, shape, strict=True)):
        assert c.node is not None  # torch returns the tensor itself for a slice of it all
        c.refs[c.node] = c.ref(x)
        return
    if not dropped:
        c.emit(OpKind.SLICE, [c.ref(x)], begin=tuple(begin), size=tuple(size))
        return
    node = c.node
    assert node is not None
    kept = emit_shaped(
        c, OpKind.SLICE, [c.ref(x)], size, "slice", begin=tuple(begin), size=tuple(size)
    )
    out = tuple(int(d) for d in node.meta["tensor_meta"].shape)
    c.emit(OpKind.RESHAPE, [kept], shape=out)


def narrow(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """x.narrow(dim, start, length) / torch.narrow: one SLICE."""
    a = dict(zip(("input", "dim", "start", "length"), args, strict=False)) | kw
    shape = c.tensors[c.ref(a["input"])].shape
    dim = int(c.value(a["dim"])) % len(shape)
    start, length = int(c.value(a["start"])) % shape[dim], int(c.value(a["length"]))
    begin, size = [0] * len(shape), list(shape)
    begin[dim], size[dim] = start, length
    c.emit(OpKind.SLICE, [c.ref(a["input"])], begin=tuple(begin), size=tuple(size))
