"""`index_put` with constant indices (`y[:, idx] = v` as export writes it, `torch.index_put`,
`Tensor.index_put`): the base with the indexed positions of one axis taken from the values, a
CONCATENATION of runs as `scatter.py` makes for a slice write (ops the MDLA maps; exact).

The indices are the aten form: one entry per leading axis, None for a whole axis (so is the
one position of a size-1 axis). One entry may be a constant integer or boolean vector; the
values broadcast to the indexed shape.
Indices computed from activations, several indexed axes (a pointwise gather), duplicate
positions and `accumulate=True` are refused with a fix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.scatter import full_as, scatter
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.ops import OpKind

_FIX = "index one axis with a constant vector (`y[:, idx] = v`), or build the result by torch.cat"


def _constant(c: Ctx, index: Any) -> np.ndarray[Any, Any]:
    """The data of a constant index tensor; refused when it is computed from activations."""
    value = c.values.get(index) if not isinstance(index, torch.Tensor) else index
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    name = c.refs.get(index)
    data = c.tensors[name].data if name is not None else None
    if data is None:
        raise Unsupported("index_put with indices computed from activations", _FIX)
    meta = index.meta.get("tensor_meta", index.meta.get("val"))  # constants are held as float32
    return np.asarray(data).astype(bool if getattr(meta, "dtype", None) == torch.bool else np.int64)


def _whole(c: Ctx, index: Any, size: int) -> bool:
    """An index of the one position of a size-1 axis (`y[[0], idx]` of a batch of one): it
    broadcasts against the other index, so the axis is written whole."""
    data = _constant(c, index)
    return size == 1 and data.size == 1 and int(data.reshape(-1)[0]) in (0, -1)


def positions(c: Ctx, indices: Any, shape: tuple[int, ...]) -> tuple[int, list[int]]:
    """(axis, positions written along it) of aten-form `indices` over a tensor of `shape`."""
    given = [(a, i) for a, i in enumerate(indices) if i is not None and not _whole(c, i, shape[a])]
    if len(given) != 1:
        raise Unsupported(f"index_put with {len(given)} indexed axes (one imports)", _FIX)
    axis, index = given[0]
    data = _constant(c, index)
    if data.dtype == bool:
        if data.shape != (shape[axis],):
            raise Unsupported(f"index_put with a boolean index of shape {list(data.shape)}", _FIX)
        data = np.nonzero(data)[0]
    if data.ndim > 1:
        raise Unsupported(f"index_put with a rank-{data.ndim} index", _FIX)
    written = [int(i) % shape[axis] for i in data.reshape(-1)]
    if len(set(written)) != len(written):
        raise Unsupported("index_put with a position written twice (torch leaves it undefined)")
    return axis, written


def _source(c: Ctx, values: Any, shape: tuple[int, ...]) -> str:
    """`values` as a tensor of `shape` (a constant broadcast, or an activation viewed)."""
    name = c.ref(values)
    t = c.tensors[name]
    if t.data is not None or t.shape == shape:
        return full_as(c, values, shape)
    if int(np.prod(t.shape)) == int(np.prod(shape)):
        return emit_shaped(c, OpKind.RESHAPE, [name], shape, "values", shape=shape)
    raise Unsupported(
        f"index_put of values shaped {list(t.shape)} into positions shaped {list(shape)}",
        "expand the values to the indexed shape first",
    )


def _index_put(c: Ctx, base: Any, indices: Any, values: Any, accumulate: Any) -> None:
    if c.value(accumulate):
        raise Unsupported("index_put with accumulate=True (`y[idx] += v`)", _FIX)
    x = c.ref(base)
    shape = c.tensors[x].shape
    axis, written = positions(c, list(indices), shape)
    part = (*shape[:axis], len(written), *shape[axis + 1 :])
    scatter(c, x, _source(c, values, part), axis, written)


def index_put(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """aten.index_put(self, indices, values, accumulate=False); torch.index_put and
    Tensor.index_put(_) take the same arguments."""
    names = ("input", "indices", "values", "accumulate")
    a = dict(zip(names, args, strict=False)) | kw
    _index_put(c, a["input"], a["indices"], a["values"], a.get("accumulate", False))
