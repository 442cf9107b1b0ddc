"""Cross-layer equalization (Nagel et al. 2019, "Data-Free Quantization"), on the float NHWC
device graph before calibration.

For two weighted ops in a row, op1 (CONV_2D with groups 1, or DEPTHWISE_CONV_2D) whose output
feeds only op2 (CONV_2D with groups 1, DEPTHWISE_CONV_2D with multiplier 1, or
FULLY_CONNECTED on a (N, C) input), and a positive per-channel scale s:

    op1: W1[c] / s[c], b1[c] / s[c]     op2: W2[.., c] * s[c]      (c: op1's output channel)

is the same function when op1's fused activation f is positively homogeneous, f(x / s) =
f(x) / s for s > 0: NONE and RELU are; RELU6 and RELU1 are not (their clip points 6 and 1 would
move to 6 / s), so those pairs are left alone and counted in the report. Padding of op2 is zero,
which scales to zero. The scale that equalizes the two per-channel weight ranges r1[c] (op1's
output channel c) and r2[c] (op2's input channel c) is s = sqrt(r1 / r2): both become
sqrt(r1 * r2). Chains (op1 -> op2 -> op3) are swept `rounds` times, since equalizing one pair
changes the ranges of its neighbours.

Exact in real arithmetic; float32 rounding changes outputs by about 1e-7 relative.
High-bias absorption (the paper's second step) needs each channel's pre-activation minimum, which
a data-free graph does not have (BatchNorm is folded away), so it is not done here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.attrs import ConvAttrs
from mdla_ir.selection import is_selection

Array = np.ndarray[Any, Any]
HOMOGENEOUS = ("NONE", "RELU")
FIRST = (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D)
SECOND = (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED)


@dataclass
class EqualizeReport:
    pairs: list[tuple[str, str]] = field(default_factory=list)  # equalized (op1, op2)
    skipped: dict[str, str] = field(default_factory=dict)  # op1 name -> why not
    range_ratio_before: float = 0.0  # mean over pairs of max(r1/r2, r2/r1) per channel
    range_ratio_after: float = 0.0

    def summary(self) -> str:
        why: dict[str, int] = {}
        for reason in self.skipped.values():
            why[reason] = why.get(reason, 0) + 1
        skipped = "; ".join(f"{n} {r}" for r, n in sorted(why.items())) or "none"
        return (
            f"equalized {len(self.pairs)} pairs (mean per-channel range ratio "
            f"{self.range_ratio_before:.1f} -> {self.range_ratio_after:.2f}); skipped: {skipped}"
        )


def _out_ranges(op: Op, w: Array) -> Array:
    """max |w| per output channel of op1 (CONV (O,KH,KW,C): axis 0; DEPTHWISE (1,KH,KW,O))."""
    flat = w.reshape(w.shape[0], -1).T if op.kind is OpKind.CONV_2D else w.reshape(-1, w.shape[-1])
    out: Array = np.abs(flat).max(axis=0)
    return out


def _in_ranges(op: Op, w: Array) -> Array:
    """max |w| per input channel of op2 (CONV: last axis; DEPTHWISE m=1: last; FC (O,K): 1)."""
    flat = w if op.kind is OpKind.FULLY_CONNECTED else w.reshape(-1, w.shape[-1])
    out: Array = np.abs(flat).max(axis=0)
    return out


def _scaled(t: Tensor, data: Array) -> Tensor:
    return Tensor(t.name, t.shape, t.dtype, data=data.astype(np.float32), quant=t.quant)


def _why_not(graph: Graph, op1: Op, users: list[Op]) -> str | None:
    """Why op1 cannot be equalized with its consumer, or None when it can."""
    out = op1.outputs[0]
    if is_selection(graph, op1) or any(is_selection(graph, u) for u in users):
        return "a selection conv (its 0/1 weights stay exact)"
    if op1.kind is OpKind.CONV_2D and ConvAttrs.of(op1).groups != 1:
        return "grouped conv"
    if op1.fuse not in HOMOGENEOUS:
        return f"fused {op1.fuse} (its clip point would move)"
    if out in graph.outputs or len(users) != 1:
        return "output used more than once"
    op2 = users[0]
    if op2.kind not in SECOND or op2.inputs[0] != out:
        return f"followed by {op2.kind.name}"
    if op2.kind is OpKind.CONV_2D and ConvAttrs.of(op2).groups != 1:
        return "followed by a grouped conv"
    w2 = graph.tensors[op2.inputs[1]]
    if op2.kind is OpKind.DEPTHWISE_CONV_2D and w2.shape[-1] != graph.tensors[out].shape[-1]:
        return "followed by a depthwise conv with a multiplier"
    if op2.kind is OpKind.FULLY_CONNECTED and len(graph.tensors[out].shape) != 2:
        return "followed by a FULLY_CONNECTED over more than channels"
    if any(not graph.tensors[n].is_const for n in (*op1.inputs[1:3], *op2.inputs[1:2])):
        return "weights are not constants"
    return None


def equalize(graph: Graph, rounds: int = 4) -> tuple[Graph, EqualizeReport]:
    """`graph` with every equalizable pair rescaled (see the module docstring), and a report."""
    report = EqualizeReport()
    users = graph.consumers()
    pairs: list[tuple[Op, Op]] = []
    for op in graph.ops:
        if op.kind not in FIRST:
            continue
        why = _why_not(graph, op, users.get(op.outputs[0], []))
        if why is None:
            pairs.append((op, users[op.outputs[0]][0]))
        else:
            report.skipped[op.name] = why
    tensors = dict(graph.tensors)
    names = {n for a, b in pairs for n in (*a.inputs[1:3], b.inputs[1])}
    data = {n: graph.const(n).astype(np.float64) for n in names}

    def ratio() -> float:
        values = []
        for op1, op2 in pairs:
            r1 = _out_ranges(op1, data[op1.inputs[1]])
            r2 = _in_ranges(op2, data[op2.inputs[1]])
            ok = (r1 > 0) & (r2 > 0)
            if ok.any():
                values.append(float(np.mean(np.maximum(r1[ok] / r2[ok], r2[ok] / r1[ok]))))
        return float(np.mean(values)) if values else 1.0

    report.range_ratio_before = ratio()
    for _ in range(rounds):
        for op1, op2 in pairs:
            w1, b1, w2 = op1.inputs[1], op1.inputs[2], op2.inputs[1]
            r1, r2 = _out_ranges(op1, data[w1]), _in_ranges(op2, data[w2])
            s = np.where((r1 > 0) & (r2 > 0), np.sqrt(r1 / np.where(r2 > 0, r2, 1.0)), 1.0)
            if op1.kind is OpKind.CONV_2D:
                data[w1] = data[w1] / s.reshape(-1, 1, 1, 1)
            else:
                data[w1] = data[w1] / s
            data[b1] = data[b1] / s
            data[w2] = data[w2] * (s if op2.kind is not OpKind.FULLY_CONNECTED else s[None, :])
    report.range_ratio_after = ratio()
    report.pairs = [(a.name, b.name) for a, b in pairs]
    for name, values in data.items():
        tensors[name] = _scaled(tensors[name], values)
    return graph.with_(tensors=tensors), report
