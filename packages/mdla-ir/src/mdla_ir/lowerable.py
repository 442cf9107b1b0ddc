"""Attributes no Neuron operand form can express: the one predicate `explain` (is it mapped?)
and lowering to `.mdla` (can it be written?) share, so that `workbench check` never calls an
op mapped that `workbench compile` then refuses.

    form_problems(op) -> ["groups=32: CONV_2D has no groups operand ..."]   # [] when writable

A Neuron CONV_2D has no groups operand (reference §4: its forms are input, filter, bias, pads,
strides, fuse[, layout[, dilations]]); a grouped convolution is GROUPED_CONV_2D, which the MDLA
is not measured to map (silicon fact 1), so `mdla_legalize` rewrites it into a dense CONV_2D.
"""

from __future__ import annotations

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Op
from mdla_ir.ops import OpKind

_CONVS = (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D)


def form_problems(op: Op) -> list[str]:
    """Why `op`'s attributes fit none of its Neuron operand forms (empty when they fit)."""
    if op.kind not in _CONVS:
        return []
    groups = ConvAttrs.of(op).groups
    if groups != 1:
        return [
            f"groups={groups}: {op.kind.name} has no groups operand (a grouped convolution is "
            "GROUPED_CONV_2D, not among the ops the MDLA maps, silicon fact 1)"
        ]
    return []
