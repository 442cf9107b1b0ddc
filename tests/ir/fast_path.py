"""Comparing the fx and export imports of one module (tests/ir/test_fast_path.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir.devices import DEFAULT_TARGET
from mdla_quant import QuantConfig, quantize, run_int8


def graph_differences(a: mdla_ir.Graph, b: mdla_ir.Graph) -> list[str]:
    """How `b` differs from `a` (empty: the same graph up to names): op kinds in order, their
    attributes, the shapes of their inputs and outputs, constants by value."""
    shapes = [[a.tensors[n].shape for n in g] for g in (a.inputs, a.outputs)]
    if shapes != [[b.tensors[n].shape for n in g] for g in (b.inputs, b.outputs)]:
        return [f"graph inputs/outputs: {shapes}"]
    if [o.kind for o in a.ops] != [o.kind for o in b.ops]:
        return [f"op kinds: {a.count()} vs {b.count()}"]
    found = []
    for x, y in zip(a.ops, b.ops, strict=True):
        if x.attrs != y.attrs:
            found.append(f"{x.name} / {y.name}: attrs {x.attrs} vs {y.attrs}")
        for i, j in zip((*x.inputs, *x.outputs), (*y.inputs, *y.outputs), strict=True):
            ta, tb = a.tensors[i], b.tensors[j]
            if ta.shape != tb.shape or (ta.data is None) != (tb.data is None):
                found.append(f"{x.name}: operand {i} {ta.shape} vs {j} {tb.shape}")
            elif ta.data is not None and not np.array_equal(ta.data, tb.data):
                found.append(f"{x.name}: constant {i} differs from {j}")
    return found


def int8_outputs(graph: mdla_ir.Graph, calib: Sequence[Sequence[Any]], x: Sequence[Any]) -> Any:
    """`graph` legalized for the default target, quantized (min/max) on `calib`, run on `x`."""
    legal = mdla_legalize.legalize(graph, mdla_legalize.load_target(DEFAULT_TARGET))
    qgraph = quantize(legal, [list(c) for c in calib], QuantConfig(method="minmax"))
    return run_int8(qgraph, list(x))


def both(
    module: nn.Module, example: tuple[torch.Tensor, ...], name: str
) -> tuple[mdla_ir.Imported, mdla_ir.Graph]:
    """auto's import of `module`, and torch.export's."""
    auto = mdla_ir.import_torch(module, example, name=name)
    return auto, mdla_ir.import_torch(module, example, name=name, path="export").graph
