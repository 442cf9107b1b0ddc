"""Writes into part of a tensor, as export functionalizes them: `y[:, 2::3] = f(y[:, 2::3])`
becomes `aten.copy` (the source cast to the view's shape) and `aten.slice_scatter` (the base
with that slice replaced); `y[:, 0] = v` becomes `aten.select_scatter`.

Each is the base's untouched slices and the source put side by side: a CONCATENATION (ops the
MDLA maps). A stepped slice that takes one position of every block of `step` (`2::3` over 51
channels: 17 blocks of 3) is a RESHAPE to (blocks, step), the block's other positions sliced
from the base around the source, a CONCATENATION along the step axis and a RESHAPE back: three
pieces whatever the length. Any other stepped slice is a CONCATENATION of runs: the base's
stretches between written positions and the source's single positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from mdla_ir.importer.broadcast import expand
from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.shaped import emit_shaped, reshape_to
from mdla_ir.ops import OpKind

Shape = tuple[int, ...]


def full_as(c: Ctx, x: Any, shape: Shape) -> str:
    """`x` (a tensor of `shape`, or a constant that broadcasts to it) as a tensor of `shape`."""
    name = c.ref(x)
    t = c.tensors[name]
    if t.shape == shape:
        return name
    if t.data is None:
        raise Unsupported(f"a tensor of shape {t.shape} written where {shape} is")
    assert c.node is not None
    full = np.broadcast_to(np.asarray(t.data, np.float32), shape)
    return c.const(f"{c.node.name}.full", np.ascontiguousarray(full))


def aten_copy(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """aten.copy (self, src): src's values in self's shape (broadcast); no op when they agree."""
    dst, src = args[0], args[1]
    shape = c.tensors[c.ref(dst)].shape
    t = c.tensors[c.ref(src)]
    if t.data is None and t.shape != shape:
        expand(c, m, (src, list(shape)), {})
        return
    assert c.node is not None
    c.refs[c.node] = full_as(c, src, shape)


def _slice(c: Ctx, x: str, axis: int, lo: int, hi: int, suffix: str) -> str:
    shape = c.tensors[x].shape
    if lo == 0 and hi == shape[axis]:
        return x
    begin = tuple(lo if a == axis else 0 for a in range(len(shape)))
    size = tuple(hi - lo if a == axis else d for a, d in enumerate(shape))
    return emit_shaped(c, OpKind.SLICE, [x], size, suffix, begin=begin, size=size)


def _runs(size: int, written: Sequence[int]) -> list[tuple[bool, int, int]]:
    """(from the source?, first, end) stretches of the output along the axis, in order."""
    at = {i: j for j, i in enumerate(written)}
    runs: list[tuple[bool, int, int]] = []
    for i in range(size):
        src, pos = (True, at[i]) if i in at else (False, i)
        if runs and runs[-1][0] == src and runs[-1][2] == pos:
            runs[-1] = (src, runs[-1][1], pos + 1)
        else:
            runs.append((src, pos, pos + 1))
    return runs


def _concat(c: Ctx, parts: list[str], axis: int, shape: Shape, suffix: str) -> str:
    if len(parts) == 1:
        return reshape_to(c, parts[0], shape, suffix)
    return emit_shaped(c, OpKind.CONCATENATION, parts, shape, suffix, axis=axis)


def _blocks(c: Ctx, base: str, src: str, axis: int, written: Sequence[int]) -> str | None:
    """One position of every block of `step` written: through (blocks, step); else None."""
    if not isinstance(written, range):
        return None
    shape, step = c.tensors[base].shape, written.step
    size = shape[axis]
    if step < 2 or written.start >= step or size % step or len(written) != size // step:
        return None
    blocks = (*shape[:axis], size // step, step, *shape[axis + 1 :])
    one = (*shape[:axis], size // step, 1, *shape[axis + 1 :])
    grid = reshape_to(c, base, blocks, "blocks")
    parts = [
        _slice(c, grid, axis + 1, 0, written.start, "before"),
        reshape_to(c, src, one, "source"),
        _slice(c, grid, axis + 1, written.start + 1, step, "after"),
    ]
    kept = [p for p in parts if c.tensors[p].shape[axis + 1] > 0]
    return _concat(c, kept, axis + 1, blocks, "interleaved")


def scatter(c: Ctx, base: str, src: str, axis: int, written: Sequence[int]) -> None:
    """The current node: `base` with the positions `written` along `axis` taken from `src`
    (its j-th position along `axis` goes to written[j])."""
    shape = c.tensors[base].shape
    out = _blocks(c, base, src, axis, written)
    if out is None:
        parts = [
            _slice(c, src if from_src else base, axis, lo, hi, f"part{k}")
            for k, (from_src, lo, hi) in enumerate(_runs(shape[axis], written))
        ]
        out = _concat(c, parts, axis, shape, "scattered")
    assert c.node is not None
    c.refs[c.node] = reshape_to(c, out, shape, "shape")


def slice_scatter(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """aten.slice_scatter (self, src, dim=0, start=None, end=None, step=1)."""
    names = ("input", "src", "dim", "start", "end", "step")
    a = dict(zip(names, args, strict=False)) | kw
    base = c.ref(a["input"])
    shape = c.tensors[base].shape
    axis = int(c.value(a.get("dim", 0))) % len(shape)
    bounds = slice(*(c.value(a.get(k)) for k in ("start", "end", "step")))
    scatter(c, base, c.ref(a["src"]), axis, range(*bounds.indices(shape[axis])))


def select_scatter(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """aten.select_scatter (self, src, dim, index): src gains the axis back (size 1)."""
    a = dict(zip(("input", "src", "dim", "index"), args, strict=False)) | kw
    base = c.ref(a["input"])
    shape = c.tensors[base].shape
    axis = int(c.value(a["dim"])) % len(shape)
    index = int(c.value(a["index"])) % shape[axis]
    one = (*shape[:axis], 1, *shape[axis + 1 :])
    src = reshape_to(c, c.ref(a["src"]), one, "source")
    scatter(c, base, src, axis, range(index, index + 1))


def _varying(mask: np.ndarray[Any, Any]) -> list[int]:
    """The axes along which a boolean mask takes both values somewhere."""
    first = (slice(None),) * mask.ndim
    return [
        ax
        for ax in range(mask.ndim)
        if not np.array_equal(mask, np.broadcast_to(mask[(*first[:ax], slice(0, 1))], mask.shape))
    ]


def aten_where(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """aten.where.self (condition, a, b) with a constant condition (export's select_scatter:
    `arange == index`): the positions it picks along its one varying axis come from `a`, the
    rest from `b`, as in `scatter`."""
    cond, a, b = args[0], args[1], args[2]
    if not isinstance(c.values.get(cond), torch.Tensor):
        raise Unsupported(
            "torch.where on a condition computed from activations (no comparison or select "
            "on the MDLA)",
            "compute the condition from constants, or blend: a * mask + b * (1 - mask)",
        )
    node, shape = c.node, c.out_shape()
    assert node is not None
    mask = np.broadcast_to(c.values[cond].numpy().astype(bool), shape)
    x, y = full_as(c, a, shape), full_as(c, b, shape)
    axes = _varying(mask)
    if not axes:
        c.refs[node] = x if mask.all() else y
        return
    if len(axes) > 1:
        raise Unsupported(
            f"a torch.where whose constant condition varies along axes {axes}",
            "vary it along one axis, or blend: a * mask + b * (1 - mask)",
        )
    line = mask[tuple(slice(None) if i == axes[0] else 0 for i in range(len(shape)))]
    pieces = [
        _slice(c, x if take else y, axes[0], lo, hi, f"part{k}")
        for k, (take, lo, hi) in enumerate(_mask_runs(line))
    ]
    c.refs[node] = _concat(c, pieces, axes[0], shape, "selected")


def _mask_runs(line: np.ndarray[Any, Any]) -> list[tuple[bool, int, int]]:
    runs: list[tuple[bool, int, int]] = []
    for i, v in enumerate(line.tolist()):
        if runs and runs[-1][0] == v:
            runs[-1] = (v, runs[-1][1], i + 1)
        else:
            runs.append((bool(v), i, i + 1))
    return runs
