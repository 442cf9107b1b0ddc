"""A CONCATENATION (its inputs share one scale on the MDLA) that joins the result of an op
whose output params the target fixes (LOGISTIC, SOFTMAX: 1/256, -128) with other activations
cannot hold both: the others' values do not fit [0, 1), and the fixed op cannot change its
params. Such an input goes through MUL(x, 1) first: the MUL requantizes it to the scale the
concatenation shares (a keypoint decode writes sigmoid visibilities between raw coordinates).
A concatenation that makes a model output is left alone: on the CPU it joins in float32
(`mdla_quant.float_region`)."""

from __future__ import annotations

import numpy as np

from mdla_ir import Op, OpKind
from mdla_legalize.rules.base import Ctx, Rule, derive, pat

_KEEPS_VALUES = (OpKind.RESHAPE, OpKind.TRANSPOSE, OpKind.SLICE, OpKind.STRIDED_SLICE)


def _fixed(ctx: Ctx, name: str) -> bool:
    """`name`'s values come from a fixed-output op (past ops that move values only)."""
    op = ctx.producer(name)
    while op is not None and op.kind in _KEEPS_VALUES:
        op = ctx.producer(op.inputs[0])
    spec = None if op is None else ctx.spec(op.kind)
    return spec is not None and spec.fixed_output is not None


def requantize_fixed_into_concat(op: Op, ctx: Ctx) -> list[Op] | None:
    """CONCATENATION(.., fixed, ..) -> CONCATENATION(.., MUL(fixed, 1), ..)."""
    spec = ctx.spec(op.kind)
    if spec is None or not spec.shared_scale or op.outputs[0] in ctx.graph.outputs:
        return None
    acts = [n for n in op.inputs if ctx.const(n) is None]
    fixed = [n for n in acts if _fixed(ctx, n)]
    if not fixed or len(fixed) == len(acts):
        return None
    one = ctx.add_const(f"{op.name}.one", np.array([1.0], np.float32))
    muls, inputs = [], list(op.inputs)
    for i, name in enumerate(op.inputs):
        if name in fixed:
            out = ctx.tensor(f"{name}.requantized", ctx.shape(name))
            muls.append(derive(op, f"requantize{i}", OpKind.MUL, [name, one], [out], fuse="NONE"))
            inputs[i] = out
    return [*muls, op.with_(inputs=tuple(inputs))]


REQUANTIZE: list[Rule] = [
    (
        pat(OpKind.CONCATENATION),
        requantize_fixed_into_concat,
    ),  # CAT(fixed, x) -> CAT(MUL(fixed, 1), x)
]
