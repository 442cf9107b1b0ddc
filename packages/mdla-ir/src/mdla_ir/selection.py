"""Selection convolutions: a 1×1 CONV_2D whose filter is a 0/1 matrix with exactly one 1 per
output channel and whose bias is zero copies input channels (a slice, a split piece, a channel
shuffle, any permutation). `mdla_legalize` builds them; `mdla_quant` recognizes them with
`is_selection` and quantizes them exactly: weight scale 1 (the int8 weights are the 0/1 values)
and the output tied to the input's scale and zero point, so the requantization multiplier is
exactly 1.0 (QuantizeMultiplier(1.0) = 2^30 · 2^(1-31): MBQM(v) = v for every int32 v) and the
int8 output is the selected int8 input, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import OpKind

Array = np.ndarray[Any, Any]


def selection_filter(channels: Sequence[int], in_channels: int) -> Array:
    """The (O, I, 1, 1) float32 filter (torch layout) picking `channels` in order."""
    w = np.zeros((len(channels), in_channels, 1, 1), np.float32)
    w[np.arange(len(channels)), list(channels), 0, 0] = 1.0
    return w


def is_selection(graph: Graph, op: Op) -> bool:
    """True when `op` is a selection CONV_2D (see the module docstring), in either layout: a
    1×1 one, or a spatial one (`mdla_legalize/rules/strided.py`: any kernel and stride, one 1
    per output channel over all its input channels and taps, no padding)."""
    const: Callable[[str], Array | None] = lambda n: graph.tensors[n].data  # noqa: E731
    if selection_order(op, const, graph.layout) is not None:
        return True
    return selection_filter_of(op, const) is not None


def selection_filter_of(op: Op, const: Callable[[str], Array | None]) -> Array | None:
    """The filter of selection conv `op` (1×1 or spatial), or None when `op` is not one."""
    if op.kind is not OpKind.CONV_2D or len(op.inputs) < 2:
        return None
    a = ConvAttrs.of(op)
    w = const(op.inputs[1])
    if any(a.padding) or a.fuse != "NONE" or a.groups != 1 or w is None or w.ndim != 4:
        return None
    return w if _zero_bias(op, const) and _one_hot(w.reshape(w.shape[0], -1)) else None


def _zero_bias(op: Op, const: Callable[[str], Array | None]) -> bool:
    b = const(op.inputs[2]) if len(op.inputs) > 2 else np.zeros(1)
    return b is not None and not np.any(b != 0)


def _one_hot(m: Array) -> bool:
    """Every row of `m` is 0/1 with exactly one 1."""
    return bool(np.all((m == 0) | (m == 1)) and np.all(np.count_nonzero(m, axis=1) == 1))


def selection_order(op: Op, const: Callable[[str], Array | None], layout: str) -> list[int] | None:
    """The input channel each output channel of selection conv `op` copies, or None when `op`
    is not one; `const(name)` gives a constant's data (None for an activation)."""
    if op.kind is not OpKind.CONV_2D or len(op.inputs) < 2:
        return None
    a = ConvAttrs.of(op)
    if a.stride != (1, 1) or any(a.padding) or a.fuse != "NONE" or a.groups != 1:
        return None
    w = const(op.inputs[1])
    if w is None or w.ndim != 4:
        return None
    kernel, channels = (w.shape[2:], w.shape[1]) if layout == "NCHW" else (w.shape[1:3], w.shape[3])
    if tuple(kernel) != (1, 1):
        return None
    m = w.reshape(w.shape[0], channels)
    if not (_zero_bias(op, const) and _one_hot(m)):
        return None
    return [int(i) for i in np.argmax(m, axis=1)]
