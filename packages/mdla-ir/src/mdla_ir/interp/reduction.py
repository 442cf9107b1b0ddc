"""Float kernels of the reductions over any axes (REDUCE_SUM/MAX/MIN) and of CLAMP: what the
importer makes of `sum`, `amax`/`max(dim)`, `amin`/`min(dim)` and `clamp`/`hardtanh` before
legalize rewrites them into ops the device maps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mdla_ir.attrs import ClampAttrs, MeanAttrs
from mdla_ir.graph import Op
from mdla_ir.interp.registry import Array, kernel
from mdla_ir.ops import OpKind

_REDUCE: dict[OpKind, Callable[..., Any]] = {
    OpKind.REDUCE_SUM: np.sum,
    OpKind.REDUCE_MAX: np.max,
    OpKind.REDUCE_MIN: np.min,
}


@kernel(*_REDUCE)
def reduce(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """sum / max / min over `axes` (the sum accumulated in float64, as MEAN's mean is)."""
    a = MeanAttrs.of(op)
    fn = _REDUCE[op.kind]
    x = args[0].astype(np.float64) if op.kind is OpKind.REDUCE_SUM else args[0]
    return [np.asarray(fn(x, axis=a.axes, keepdims=a.keepdims)).astype(np.float32)]


@kernel(OpKind.CLAMP)
def clamp(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """min(max(x, lo), hi)."""
    a = ClampAttrs.of(op)
    return [np.clip(args[0], np.float32(a.lo), np.float32(a.hi)).astype(np.float32)]
