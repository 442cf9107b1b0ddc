"""Converters for reductions over any dims: `sum`, `amax`/`amin`, `max`/`min` (over everything,
or over a dim with (values, indices) out), on both import paths; `max`/`min` of two tensors
is the elementwise extreme.

Each is one REDUCE_SUM / REDUCE_MAX / REDUCE_MIN op (axes, keepdims); legalize turns them into
ops the MDLA maps (`mdla_legalize.rules.reduce`). A reduction over the batch axis of a batch
larger than one is refused (the device reduces within an image only).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx

from mdla_ir.importer.context import Converter, Ctx, Unsupported
from mdla_ir.importer.pairwise import pairwise
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.importer.slicing import getitem
from mdla_ir.importer.stacked import over_stack
from mdla_ir.ops import OpKind

_BATCH_FIX = "reduce over the channel and spatial dims only (the batch is reduced on the host)"


def _axes(c: Ctx, x: Any, dim: Any) -> tuple[int, ...]:
    shape = c.tensors[c.ref(x)].shape
    dims = range(len(shape)) if dim is None or dim == [] or dim == () else dim
    dims = [dims] if isinstance(dims, int) else dims
    axes = tuple(sorted({int(d) % len(shape) for d in dims}))
    if 0 in axes and shape[0] != 1:
        raise Unsupported(f"a reduction over the batch axis (batch {shape[0]})", _BATCH_FIX)
    return axes


def _out_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep: bool) -> tuple[int, ...]:
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _call(names: tuple[str, ...], args: tuple[Any, ...], kw: dict[str, Any]) -> dict[str, Any]:
    return dict(zip(names, args, strict=False)) | kw


def reduction(kind: OpKind) -> Converter:
    """sum / amax / amin (x, dim=None, keepdim=False): one op of `kind`."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        a = _call(("input", "dim", "keepdim"), args, kw)
        if kw.get("dtype") is not None or (len(args) > 3 and args[3] is not None):
            raise Unsupported("a reduction with a dtype (only float32 is imported)")
        keep = bool(c.value(a.get("keepdim", False)))
        if over_stack(c, kind, a["input"], c.value(a.get("dim")), keep):
            return
        axes = _axes(c, a["input"], c.value(a.get("dim")))
        c.emit(kind, [c.ref(a["input"])], axes=axes, keepdims=keep)

    return convert


def extreme(kind: OpKind) -> Converter:
    """torch.max / torch.min (x) over everything, or (x, dim, keepdim) -> (values, indices):
    the values are one op of `kind` (picked by getitem 0, or `.values`); the elementwise form
    (x, other) is the elementwise extreme (`pairwise`)."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        a = _call(("input", "dim", "keepdim"), args, kw)
        dim = a.get("dim")
        if c.is_tensor(dim) or "other" in kw:
            other = kw.get("other", dim)
            pairwise(kind is OpKind.REDUCE_MAX)(c, m, (a["input"], other), {})
            return
        if dim is None:
            c.emit(kind, [c.ref(a["input"])], axes=_axes(c, a["input"], None), keepdims=False)
            return
        axes = _axes(c, a["input"], int(c.value(dim)))
        keep = bool(c.value(a.get("keepdim", False)))
        x = c.ref(a["input"])
        out = _out_shape(c.tensors[x].shape, axes, keep)
        node = c.node
        assert node is not None
        c.refs[node] = emit_shaped(c, kind, [x], out, "values", axes=axes, keepdims=keep)

    return convert


_EXTREMES = {torch.max, torch.min}


def _is_pair(node: Any) -> bool:
    """An fx node of max/min over a dim: its value is (values, indices), its ref the values."""
    if not isinstance(node, fx.Node) or len(node.args) + len(node.kwargs) < 2:
        return False
    if node.op == "call_method":
        return node.target in ("max", "min")
    return node.op == "call_function" and node.target in _EXTREMES


def _pair_item(c: Ctx, src: Any, index: Any) -> None:
    assert c.node is not None
    if int(c.value(index)) != 0 and not c.node.users:
        return  # `values, _ = torch.max(x, 1)`: the unused indices
    if int(c.value(index)) != 0:
        raise Unsupported(
            "the indices of torch.max/min over a dim", "use torch.argmax/argmin for indices"
        )
    c.refs[c.node] = c.refs[src]


def pick_values(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """operator.getitem: item 0 of a max/min over a dim is its values; else `getitem`."""
    if _is_pair(args[0]) and args[0] in c.refs:
        _pair_item(c, args[0], args[1])
        return
    getitem(c, m, args, kw)


def values_attr(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """getattr(max over a dim, "values") as item 0."""
    if not _is_pair(args[0]) or args[1] != "values":
        raise Unsupported(f"attribute `{args[1]}` of `{getattr(args[0], 'name', args[0])}`")
    _pair_item(c, args[0], 0)


def aten_extreme(kind: OpKind) -> Converter:
    """aten.max.dim / aten.min.dim (x, dim, keepdim) -> (values, indices): the values are one
    op of `kind`, picked by the program's getitem 0."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        from mdla_ir.importer.aten import pieces  # the export path's multi-output table

        a = _call(("input", "dim", "keepdim"), args, kw)
        axes = _axes(c, a["input"], int(c.value(a["dim"])))
        keep = bool(c.value(a.get("keepdim", False)))
        x = c.ref(a["input"])
        out = _out_shape(c.tensors[x].shape, axes, keep)
        node = c.node
        assert node is not None
        pieces(c)[node] = [emit_shaped(c, kind, [x], out, "values", axes=axes, keepdims=keep)]

    return convert
