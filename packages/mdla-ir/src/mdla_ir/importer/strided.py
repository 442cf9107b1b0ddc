"""Converters for strided data movement: slices with a step (`x[..., ::2, 1::2]`,
`aten.slice` with step > 1), `flip`, `roll`, and the reflect / replicate / circular modes of
`F.pad` (`nn.ReflectionPad2d`, `nn.ReplicationPad2d`, `aten.reflection_pad2d`, ...).

    x[b:e:s] (s > 1)         -> STRIDED_SLICE begin b, size ceil((e - b) / s), stride s
    flip(x, dims)            -> STRIDED_SLICE begin d - 1, stride -1 on each flipped axis
    roll(x, k, dim)          -> CONCATENATION(SLICE(x, d-k..d), SLICE(x, 0..d-k)) per dim
    pad(x, p, 'reflect')     -> CONCATENATION(x[p], ..., x[1], x, x[d-2], ..., x[d-1-p]) per axis
    pad(x, p, 'replicate')   -> CONCATENATION(x[0] p times, x, x[d-1] p times) per axis
    pad(x, p, 'circular')    -> CONCATENATION(x[d-p..d], x, x[0..p]) per axis

so every one of them is made of slices and concatenations, which `mdla_legalize` maps onto the
MDLA exactly where the slice is a selection convolution (rules/strided.py): channel picks in
any order and step, H/W phases with positive steps. A flip of H or W is not one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.ops import OpKind

PAD_MODES = ("reflect", "replicate", "circular")


def _shape(c: Ctx, x: Any) -> tuple[int, ...]:
    return c.tensors[c.ref(x)].shape


def _out_shape(c: Ctx) -> tuple[int, ...]:
    node = c.node
    assert node is not None
    meta = node.meta.get("tensor_meta")
    meta = meta if meta is not None else node.meta["val"]
    return tuple(int(d) for d in meta.shape)


def strided_slice(c: Ctx, x: Any, axes: Sequence[tuple[int, int, int]], drop: bool) -> None:
    """One STRIDED_SLICE of `x`, per axis (begin, count, step); then a RESHAPE to the node's
    shape when `drop` (integer indices removed axes)."""
    begin, size, strides = (tuple(int(a[i]) for a in axes) for i in range(3))
    if not drop:
        c.emit(OpKind.STRIDED_SLICE, [c.ref(x)], begin=begin, size=size, strides=strides)
        return
    kept = emit_shaped(
        c, OpKind.STRIDED_SLICE, [c.ref(x)], size, "slice", begin=begin, size=size, strides=strides
    )
    c.emit(OpKind.RESHAPE, [kept], shape=_out_shape(c))


def axis_of(start: Any, stop: Any, step: Any, d: int) -> tuple[int, int, int]:
    """(begin, count, step) of python slice start:stop:step over an axis of `d`."""
    if step is not None and int(step) <= 0:
        raise Unsupported(f"a slice with step {step} (torch allows only positive steps)")
    lo, hi, s = slice(start, stop, step).indices(d)
    count = len(range(lo, hi, s))
    if count == 0:
        raise Unsupported("an empty slice")
    return lo, count, s


def aten_slice(c: Ctx, x: Any, dim: int, start: Any, end: Any, step: int) -> None:
    shape = _shape(c, x)
    axes = [(0, d, 1) for d in shape]
    axes[dim] = axis_of(start, end, step, shape[dim])
    strided_slice(c, x, axes, drop=False)


def flip(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.flip / Tensor.flip / aten.flip(x, dims)."""
    x = args[0] if args else kw["input"]
    dims = c.value(args[1:] if len(args) > 2 else (args[1] if len(args) > 1 else kw["dims"]))
    shape = _shape(c, x)
    axes = [(0, d, 1) for d in shape]
    for dim in [dims] if isinstance(dims, int) else dims:
        d = shape[int(dim) % len(shape)]
        axes[int(dim) % len(shape)] = (d - 1, d, -1)
    strided_slice(c, x, axes, drop=False)


def _piece(c: Ctx, x: str, axis: int, lo: int, n: int, tag: str) -> str:
    shape = list(c.tensors[x].shape)
    if (lo, n) == (0, shape[axis]):
        return x
    begin = [0] * len(shape)
    begin[axis], shape[axis] = lo, n
    return emit_shaped(c, OpKind.SLICE, [x], shape, tag, begin=tuple(begin), size=tuple(shape))


def _concat(c: Ctx, parts: list[str], axis: int, last: bool) -> str:
    if last:
        c.emit(OpKind.CONCATENATION, parts, axis=axis)
        node = c.node
        assert node is not None
        return c.refs[node]
    shape = list(c.tensors[parts[0]].shape)
    shape[axis] = sum(c.tensors[p].shape[axis] for p in parts)
    return emit_shaped(c, OpKind.CONCATENATION, parts, shape, f"cat{axis}", axis=axis)


def roll(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.roll / Tensor.roll / aten.roll(x, shifts, dims): two slices and a concatenation
    per rolled axis."""
    a = dict(zip(("input", "shifts", "dims"), args, strict=False)) | kw
    shifts, dims = c.value(a["shifts"]), c.value(a.get("dims"))
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims or [])
    if len(dims) != len(shifts):
        raise Unsupported("roll without one dim per shift (the flattened roll)")
    x = c.ref(a["input"])
    rank = len(c.tensors[x].shape)
    todo = []
    for d, k in zip(dims, shifts, strict=True):
        axis = int(d) % rank
        if int(k) % c.tensors[x].shape[axis]:
            todo.append((axis, int(k) % c.tensors[x].shape[axis]))
    if not todo:
        c.emit(OpKind.IDENTITY, [x])
    for i, (axis, k) in enumerate(todo):
        n = c.tensors[x].shape[axis]
        tail = _piece(c, x, axis, n - k, k, f"tail{axis}")
        head = _piece(c, x, axis, 0, n - k, f"head{axis}")
        x = _concat(c, [tail, head], axis, last=i == len(todo) - 1)


def _sources(mode: str, d: int, lo: int, hi: int) -> tuple[list[int], list[int]]:
    """The source indices of the `lo` values before and `hi` values after an axis of `d`."""
    if mode == "reflect":
        if max(lo, hi) >= d:
            raise Unsupported(f"reflect padding {max(lo, hi)} on an axis of {d} (torch: < {d})")
        return list(range(lo, 0, -1)), list(range(d - 2, d - 2 - hi, -1))
    if mode == "replicate":
        return [0] * lo, [d - 1] * hi
    if max(lo, hi) > d:
        raise Unsupported(f"circular padding {max(lo, hi)} on an axis of {d}")
    return list(range(d - lo, d)), list(range(hi))


def mode_pad(c: Ctx, x: Any, pad: Sequence[int], mode: str) -> None:
    """F.pad(x, pad, mode) for the modes of PAD_MODES: per padded axis (the last first, F.pad's
    order), a CONCATENATION of single-index SLICEs around x."""
    if mode not in PAD_MODES:
        raise Unsupported(f"pad mode {mode!r} (constant, {', '.join(PAD_MODES)} import)")
    if any(int(p) < 0 for p in pad):
        raise Unsupported(f"negative {mode} padding (cropping)")
    y = c.ref(x)
    rank = len(c.tensors[y].shape)
    todo = [
        (rank - 1 - i, int(pad[2 * i]), int(pad[2 * i + 1]))
        for i in range(len(pad) // 2)
        if int(pad[2 * i]) or int(pad[2 * i + 1])
    ]
    if not todo:
        c.emit(OpKind.IDENTITY, [y])
    for i, (axis, lo, hi) in enumerate(todo):
        before, after = _sources(mode, c.tensors[y].shape[axis], lo, hi)
        cut: dict[int, str] = {}
        for j in {*before, *after}:
            cut[j] = _piece(c, y, axis, j, 1, f"{mode}{axis}_{j}")
        parts = [cut[j] for j in before] + [y] + [cut[j] for j in after]
        y = _concat(c, parts, axis, last=i == len(todo) - 1)


def m_mode_pad(mode: str) -> Any:
    """nn.ReflectionPad1d/2d, nn.ReplicationPad1d/2d, nn.CircularPad1d/2d (their `padding`)."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        mode_pad(c, args[0] if args else kw["input"], [int(p) for p in m.padding], mode)

    return convert


def aten_mode_pad(mode: str) -> Any:
    """aten.reflection_pad2d(x, pad) and its siblings."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        mode_pad(c, args[0], [int(p) for p in c.value(args[1])], mode)

    return convert
