"""Activations and elementwise ops the MDLA lacks, as exact compositions of ops it maps.

Each rule is exact in float32 up to rounding of a constant (1/6, 1/c), far below 1e-5 relative.
"""

from __future__ import annotations

import numpy as np

from mdla_ir import Op, OpKind
from mdla_ir.attrs import FuseAttrs, NormAttrs, WhereAttrs
from mdla_legalize.rules.base import Ctx, Rule, derive, pat

UNARY = (OpKind.RELU, OpKind.RELU6, OpKind.LOGISTIC, OpKind.TANH, OpKind.HARD_SWISH)


def silu_to_logistic_mul(op: Op, ctx: Ctx) -> list[Op] | None:
    x, (y,) = op.inputs[0], op.outputs
    s = ctx.tensor(f"{y}.sigmoid", ctx.shape(x))
    return [
        derive(op, "logistic", OpKind.LOGISTIC, [x], [s]),
        derive(op, "", OpKind.MUL, [x, s], [y], fuse="NONE"),
    ]


def hardsigmoid_to_relu6_mul(op: Op, ctx: Ctx) -> list[Op] | None:
    """relu6(x + 3) / 6 == (ADD(x, 3) fused RELU6) * (1/6)."""
    x, (y,) = op.inputs[0], op.outputs
    t = ctx.tensor(f"{y}.shifted", ctx.shape(x))
    three = ctx.add_const(f"{op.name}.three", np.array([3.0], np.float32))
    sixth = ctx.add_const(f"{op.name}.sixth", np.array([1.0 / 6.0], np.float32))
    return [
        derive(op, "add", OpKind.ADD, [x, three], [t], fuse="RELU6"),
        derive(op, "", OpKind.MUL, [t, sixth], [y], fuse="NONE"),
    ]


def hardsigmoid_mul_to_hard_swish(op: Op, ctx: Ctx) -> list[Op] | None:
    """MUL(x, HARD_SIGMOID(x)) -> HARD_SWISH(x) (the hand-written hardswish of MobileNetV3)."""
    if op.fuse != "NONE":
        return None
    for a, b in (op.inputs, op.inputs[::-1]):
        gate = ctx.producer(b)
        if (
            gate is not None
            and gate.kind is OpKind.HARD_SIGMOID
            and gate.inputs[0] == a
            and ctx.sole_use(b)
            and ctx.shape(a) == ctx.shape(op.outputs[0])
        ):
            ctx.take(b)
            return [derive(op, "", OpKind.HARD_SWISH, [a], op.outputs)]
    return None


def where_to_prelu(op: Op, ctx: Ctx) -> list[Op] | None:
    """A WHERE that is x on one side of 0 and a * x on the other, the LeakyReLU written by hand
    (`torch.where(x > 0, x, 0.1 * x)`, `x.masked_fill(x < 0, 0)`), -> PRELU(x, a), or RELU when
    a == 0: the MDLA maps both, where WHERE is a table on the CPU. Exact: both are 0 at x == 0
    (a * -0.0 is -0.0 on either side), and a NaN stays NaN."""
    w = WhereAttrs.of(op)
    if w.threshold != 0.0 or w.then_offset or w.else_offset:
        return None
    if w.compare in ("gt", "ge"):
        positive, negative = w.then_scale, w.else_scale
    elif w.compare in ("lt", "le"):
        positive, negative = w.else_scale, w.then_scale
    else:
        return None
    if positive != 1.0 or negative == 1.0:
        return None
    x = op.inputs[0]
    if negative == 0.0:
        return [derive(op, "", OpKind.RELU, [x], op.outputs)]
    alpha = ctx.add_const(f"{op.name}.negative_slope", np.array([negative], np.float32))
    return [derive(op, "", OpKind.PRELU, [x, alpha], op.outputs)]


def batchnorm_to_mul_add(op: Op, ctx: Ctx) -> list[Op] | None:
    """A BatchNorm no conv absorbed: x * s + t with s = gamma/sqrt(var+eps), t = beta - mean*s."""
    consts = [ctx.const(n) for n in op.inputs[1:5]]
    if any(c is None for c in consts):
        return None
    mean, var, gamma, beta = (np.asarray(c, np.float64) for c in consts)
    scale = gamma / np.sqrt(var + NormAttrs.of(op).eps)
    x, (y,) = op.inputs[0], op.outputs
    rank = len(ctx.shape(x))
    view = [1] * rank
    view[1 if ctx.layout == "NCHW" else rank - 1] = -1
    s = ctx.add_const(f"{op.name}.scale", scale.reshape(view).astype(np.float32))
    t = ctx.add_const(f"{op.name}.shift", (beta - mean * scale).reshape(view).astype(np.float32))
    m = ctx.tensor(f"{y}.scaled", ctx.shape(x))
    return [
        derive(op, "mul", OpKind.MUL, [x, s], [m], fuse="NONE"),
        derive(op, "", OpKind.ADD, [m, t], [y], fuse="NONE"),
    ]


def sub_const_to_add(op: Op, ctx: Ctx) -> list[Op] | None:
    """SUB(x, c) -> ADD(x, -c) (negation is exact)."""
    c = ctx.const(op.inputs[1])
    if c is None or ctx.const(op.inputs[0]) is not None:
        return None
    neg = ctx.add_const(f"{op.inputs[1]}.neg", (-c).astype(np.float32))
    return [op.with_(kind=OpKind.ADD, inputs=(op.inputs[0], neg))]


def div_const_to_mul(op: Op, ctx: Ctx) -> list[Op] | None:
    """DIV(x, c) -> MUL(x, 1/c) (one rounding of 1/c: within 1 ulp)."""
    c = ctx.const(op.inputs[1])
    if c is None or ctx.const(op.inputs[0]) is not None or not np.all(c != 0):
        return None
    inv = ctx.add_const(
        f"{op.inputs[1]}.reciprocal", (1.0 / c.astype(np.float64)).astype(np.float32)
    )
    return [op.with_(kind=OpKind.MUL, inputs=(op.inputs[0], inv))]


def div_to_reciprocal_mul(op: Op, ctx: Ctx) -> list[Op] | None:
    """DIV(a, b), b an activation -> MUL(a, RECIPROCAL(b)): the MDLA has no division, and the
    reciprocal is a CPU table (one int8 lookup); 1 / b (a all ones) is the RECIPROCAL alone."""
    a, b = op.inputs[:2]
    if ctx.const(b) is not None:
        return None
    (y,) = op.outputs
    fuse = FuseAttrs.of(op).fuse
    ones = ctx.const(a)
    alone = ones is not None and bool(np.all(ones == 1.0)) and fuse == "NONE"
    if alone and ctx.shape(b) == ctx.shape(y):
        return [derive(op, "", OpKind.RECIPROCAL, [b], [y])]
    r = ctx.tensor(f"{y}.reciprocal", ctx.shape(b))
    pair = [r, a] if ctx.const(a) is not None else [a, r]  # the activation first
    return [
        derive(op, "reciprocal", OpKind.RECIPROCAL, [b], [r]),
        derive(op, "", OpKind.MUL, pair, [y], fuse=fuse),
    ]


def gate_to_broadcast_mul(op: Op, ctx: Ctx) -> list[Op] | None:
    """MUL(gate[N,C,1,1], x[N,C,H,W]) -> MUL(x, gate): the full-size operand first, the
    squeeze-excite gate broadcast as the second operand (TFLite/Neuron broadcast order)."""
    a, b = op.inputs[:2]
    out = ctx.shape(op.outputs[0])
    if ctx.shape(a) == out or ctx.shape(b) != out or ctx.const(b) is not None:
        return None
    return [op.with_(inputs=(b, a))]


# Patterns first (they need the ops the decompositions below would take apart).
PATTERNS: list[Rule] = [
    (pat(OpKind.MUL), hardsigmoid_mul_to_hard_swish),  # MUL(x, HARD_SIGMOID(x)) -> HARD_SWISH(x)
]

ACTIVATIONS: list[Rule] = [
    (pat(OpKind.SILU), silu_to_logistic_mul),  # SILU(x) -> MUL(x, LOGISTIC(x))
    (pat(OpKind.WHERE), where_to_prelu),  # WHERE(x; x > 0, x, a * x) -> PRELU(x, a) or RELU
    (pat(OpKind.HARD_SIGMOID), hardsigmoid_to_relu6_mul),  # HSIG(x) -> MUL(RELU6(x + 3), 1/6)
    (pat(OpKind.BATCH_NORM), batchnorm_to_mul_add),  # BATCH_NORM(x) -> ADD(MUL(x, s), t)
    (pat(OpKind.SUB), sub_const_to_add),  # SUB(x, c) -> ADD(x, -c)
    (pat(OpKind.DIV), div_const_to_mul),  # DIV(x, c) -> MUL(x, 1/c)
    (pat(OpKind.DIV), div_to_reciprocal_mul),  # DIV(a, b) -> MUL(a, RECIPROCAL(b))
    (pat(OpKind.MUL), gate_to_broadcast_mul),  # MUL(gate, x) -> MUL(x, gate)
]
