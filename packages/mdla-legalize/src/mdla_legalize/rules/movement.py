"""Data-movement clean-up on the device graph."""

from __future__ import annotations

from mdla_ir import Op, OpKind
from mdla_ir.attrs import TransposeAttrs
from mdla_legalize.rules.base import Ctx, Rule, pat


def cancel_transposes(op: Op, ctx: Ctx) -> list[Op] | None:
    """TRANSPOSE(TRANSPOSE(x, p), q) with p∘q the identity -> x (e.g. between two ops the layout
    pass wrapped back-to-back)."""
    src = op.inputs[0]
    inner = ctx.producer(src)
    if inner is None or inner.kind is not OpKind.TRANSPOSE or not ctx.sole_use(src):
        return None
    p, q = TransposeAttrs.of(inner).perm, TransposeAttrs.of(op).perm
    if tuple(p[i] for i in q) != tuple(range(len(q))):
        return None
    ctx.take(src)
    ctx.rw.alias[op.outputs[0]] = inner.inputs[0]
    return []


MOVEMENT: list[Rule] = [
    (pat(OpKind.TRANSPOSE), cancel_transposes),  # TRANSPOSE(TRANSPOSE(x, p), p^-1) -> x
]
