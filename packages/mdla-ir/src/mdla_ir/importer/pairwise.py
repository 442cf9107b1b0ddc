"""Converters for the elementwise extremes of two tensors: `torch.maximum`/`minimum`, the
two-tensor forms of `torch.max`/`min`, and a clamp whose bounds are tensors, on both import
paths (ATen's `maximum`, `minimum`, `clamp.Tensor`, `clamp_min.Tensor`, `clamp_max.Tensor`).

Each is imported as the exact composition of ops the MDLA maps:
max(a, b) = a + relu(b - a) and min(a, b) = a - relu(a - b) (SUB then legalizes to ADD/MUL).
"""

from __future__ import annotations

from typing import Any

from mdla_ir.importer.context import Converter, Ctx, Unsupported
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.ops import OpKind


def elementwise_extreme(
    c: Ctx, a: str, b: str, top: bool, suffix: str, last: bool, shape: tuple[int, ...] = ()
) -> str:
    """max(a, b) (top) or min(a, b) as SUB, RELU, then ADD/SUB: the last op is the node's
    (else its output has `shape`, the node's by default)."""
    shape = shape or c.out_shape()
    pair = (b, a) if top else (a, b)
    diff = emit_shaped(c, OpKind.SUB, pair, shape, f"{suffix}.diff", fuse="NONE")
    gap = emit_shaped(c, OpKind.RELU, [diff], shape, f"{suffix}.relu")
    kind = OpKind.ADD if top else OpKind.SUB
    if last:
        c.emit(kind, [a, gap], fuse="NONE")
        node = c.node
        assert node is not None
        return c.refs[node]
    return emit_shaped(c, kind, [a, gap], shape, suffix, fuse="NONE")


def pairwise(top: bool) -> Converter:
    """torch.maximum / minimum (input, other), and aten.maximum / minimum."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        a = dict(zip(("input", "other"), args, strict=False)) | kw
        elementwise_extreme(
            c, c.ref(a["input"]), c.ref(a["other"]), top, "max" if top else "min", True
        )

    return convert


def clamp_tensors(c: Ctx, x: Any, lo: Any, hi: Any) -> None:
    """clamp(x, lo, hi) with either bound a tensor: min(max(x, lo), hi)."""
    if lo is None and hi is None:
        raise Unsupported("a clamp without a bound", "give min=, max= or both")
    y = c.ref(x)
    if lo is not None:
        y = elementwise_extreme(c, y, c.ref(lo), True, "lo", hi is None)
    if hi is not None:
        elementwise_extreme(c, y, c.ref(hi), False, "hi", True)


def aten_clamp_tensor(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """aten.clamp.Tensor (self, min=None, max=None)."""
    a = dict(zip(("input", "min", "max"), args, strict=False)) | kw
    clamp_tensors(c, a["input"], a.get("min"), a.get("max"))


def aten_clamp_one(side: str) -> Converter:
    """aten.clamp_min.Tensor / clamp_max.Tensor (self, bound)."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        bound = args[1] if len(args) > 1 else kw[side]
        lo, hi = (bound, None) if side == "min" else (None, bound)
        clamp_tensors(c, args[0], lo, hi)

    return convert
