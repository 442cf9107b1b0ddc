"""Converters for clamps with any bounds: `torch.clamp`/`clip` (function and method),
`F.hardtanh`/`nn.Hardtanh`, and ATen's `clamp`, `clamp_min`, `clamp_max`, `hardtanh`.

Bounds (0, 6) are RELU6 and (0, none) RELU, which the MDLA maps as they are; any other bounds
are one CLAMP op, which legalize rewrites into RELU/RELU6/RELU1 compositions
(`mdla_legalize.rules.clamp`). A bound that is a tensor makes the clamp a composition of
elementwise extremes (`pairwise`).
"""

from __future__ import annotations

import math
from typing import Any

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.pairwise import clamp_tensors
from mdla_ir.ops import OpKind

_TENSOR_FIX = "give the bounds as numbers (a bound computed at run time cannot be clamped)"


def _bound(c: Ctx, v: Any, default: float) -> float:
    if v is None:
        return default
    if c.is_tensor(v):
        raise Unsupported("a clamp whose bound is a tensor", _TENSOR_FIX)
    value = c.value(v)
    if hasattr(value, "numel"):
        if value.numel() != 1:
            raise Unsupported("a clamp with a bound per element", _TENSOR_FIX)
        value = value.item()
    return float(value)


def emit_clamp(c: Ctx, x: Any, lo: float, hi: float) -> None:
    """RELU6 / RELU where the bounds are theirs, else CLAMP(lo, hi)."""
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise Unsupported(f"clamp({lo}, {hi}): the bounds must satisfy min <= max")
    if (lo, hi) == (0.0, 6.0):
        c.emit(OpKind.RELU6, [c.ref(x)])
    elif lo == 0.0 and hi == math.inf:
        c.emit(OpKind.RELU, [c.ref(x)])
    else:
        c.emit(OpKind.CLAMP, [c.ref(x)], lo=lo, hi=hi)


def _per_element(c: Ctx, v: Any) -> bool:
    """A bound that is a tensor or holds more than one number (clamped elementwise)."""
    if v is None:
        return False
    return c.is_tensor(v) or getattr(c.value(v), "numel", lambda: 1)() != 1


def f_clamp(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.clamp / clip (x, min=None, max=None), and their methods; a bound that is a tensor
    makes it min(max(x, min), max) (`pairwise.clamp_tensors`)."""
    a = dict(zip(("input", "min", "max"), args, strict=False)) | kw
    if _per_element(c, a.get("min")) or _per_element(c, a.get("max")):
        clamp_tensors(c, a["input"], a.get("min"), a.get("max"))
        return
    emit_clamp(c, a["input"], _bound(c, a.get("min"), -math.inf), _bound(c, a.get("max"), math.inf))


def clamp_one(side: str) -> Any:
    """aten.clamp_min / clamp_max (x, bound)."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        b = _bound(c, args[1] if len(args) > 1 else kw[side], 0.0)
        lo, hi = (b, math.inf) if side == "min" else (-math.inf, b)
        emit_clamp(c, args[0], lo, hi)

    return convert


def m_hardtanh(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """nn.Hardtanh (m given) or F.hardtanh / aten.hardtanh (x, min_val=-1, max_val=1)."""
    if m is not None:
        lo, hi = float(m.min_val), float(m.max_val)
    else:
        a = dict(zip(("input", "min_val", "max_val"), args, strict=False)) | kw
        lo, hi = _bound(c, a.get("min_val"), -1.0), _bound(c, a.get("max_val"), 1.0)
    emit_clamp(c, args[0] if args else kw["input"], lo, hi)
