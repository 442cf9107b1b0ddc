"""The last stage: ops no earlier rule made map, rewritten into the form a CPU partition runs.

A SLICE left after every selection rule (`channel_slice_to_selection`, `strided_slice_to_
selection`: not 4-D, a batch slice, a layout they do not take, ...) becomes the STRIDED_SLICE
with unit steps that computes it (out[i] = x[begin + i], codes unchanged), so the IR after
legalization holds no SLICE and `--cpu auto` places it with STRIDED_SLICE's int8 kernel.
"""

from __future__ import annotations

from mdla_ir import Op, OpKind
from mdla_ir.attrs import SliceAttrs
from mdla_legalize.rules.base import Ctx, Rule, pat


def slice_to_strided_slice(op: Op, ctx: Ctx) -> list[Op] | None:
    """SLICE(x, begin, size) -> STRIDED_SLICE(x, begin, size, strides 1)."""
    a = SliceAttrs.of(op)
    attrs = {"begin": a.begin, "size": a.size, "strides": (1,) * len(a.begin)}
    return [op.with_(kind=OpKind.STRIDED_SLICE, attrs=attrs)]


CPU_FORMS: list[Rule] = [
    (pat(OpKind.SLICE), slice_to_strided_slice),  # SLICE -> STRIDED_SLICE (unit steps)
]
