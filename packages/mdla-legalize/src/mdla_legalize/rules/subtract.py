"""SUB of two activations (or a constant minus an activation) as ADD and MUL, which the MDLA
maps: a - b == a + b * (-1). Negation is exact in float; in int8 the MUL requantizes b's
negation to its own calibrated scale and the ADD requantizes the sum, as any ADD does.
(SUB by a constant is `sub_const_to_add`, in the activations table.)"""

from __future__ import annotations

import numpy as np

from mdla_ir import Op, OpKind
from mdla_legalize.rules.base import Ctx, Rule, derive, pat


def sub_to_add_negated(op: Op, ctx: Ctx) -> list[Op] | None:
    """SUB(a, b) -> ADD(a, MUL(b, -1)), b an activation."""
    a, b = op.inputs[:2]
    if ctx.const(b) is not None or ctx.shape(b) == ():  # a rank-0 constant is held as (1,)
        return None
    minus = ctx.add_const(f"{op.name}.minus_one", np.array([-1.0], np.float32))
    neg = ctx.tensor(f"{op.outputs[0]}.negated", ctx.shape(b))
    return [
        derive(op, "negate", OpKind.MUL, [b, minus], [neg], fuse="NONE"),
        op.with_(kind=OpKind.ADD, inputs=(neg, a) if ctx.const(a) is not None else (a, neg)),
    ]


SUBTRACT: list[Rule] = [
    (pat(OpKind.SUB), sub_to_add_negated),  # SUB(a, b) -> ADD(a, MUL(b, -1))
]
