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
    """True when `op` is a selection CONV_2D (see the module docstring), in either layout."""
    return selection_order(op, lambda n: graph.tensors[n].data, graph.layout) is not None


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
    if len(op.inputs) > 2:
        b = const(op.inputs[2])
        if b is None or np.any(b != 0):
            return None
    if not (np.all((m == 0) | (m == 1)) and np.all(np.count_nonzero(m, axis=1) == 1)):
        return None
    return [int(i) for i in np.argmax(m, axis=1)]
