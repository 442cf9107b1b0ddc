"""1-D layers meet on the H = 1 image: the reshapes between them cancel (exact: data movement).

The importer writes each 1-D layer as its 2-D op between RESHAPEs (N, C, L) <-> (N, C, 1, L).
Between two such layers an elementwise op (ReLU, a residual ADD, ...) runs on the 3-D tensor;
an elementwise op commutes with any reshape, so it moves onto the 4-D tensor and the RESHAPE
moves past it, until it meets the next layer's RESHAPE and the pair collapses. Nothing is left
3-D in the device graph but the model's own input and output ends.

    f(RESHAPE(a4), RESHAPE(b4)) -> RESHAPE(f(a4, b4))     (a4, b4 of one rank-4 shape)
    MEAN over L(RESHAPE(x4))    -> RESHAPE(MEAN over H, W (x4))
    RESHAPE(RESHAPE(x))         -> RESHAPE(x), or x       (also when the inner one has other uses)

A bypassed RESHAPE that had several readers is dropped by `apply_table` once none is left.
"""

from __future__ import annotations

from mdla_ir import Op, OpKind
from mdla_ir.attrs import MeanAttrs
from mdla_ir.ops import ACTIVATIONS, BINARY
from mdla_legalize.rules.base import Ctx, Rule, derive, pat

ELEMENTWISE = ACTIVATIONS | BINARY


def sink_reshape(op: Op, ctx: Ctx) -> list[Op] | None:
    (y,) = op.outputs
    out = ctx.shape(y)
    if len(out) == 4:
        return None
    sources: list[str] = []
    for name in op.inputs:
        data = ctx.const(name)
        if data is not None:
            if data.size != 1:
                return None
            sources.append(name)
            continue
        p = ctx.producer(name)
        if p is None or p.kind is not OpKind.RESHAPE or ctx.shape(name) != out:
            return None
        sources.append(p.inputs[0])
    image = {ctx.shape(s) for s in sources if ctx.const(s) is None}
    if len(image) != 1 or len(next(iter(image))) != 4:
        return None
    for name in dict.fromkeys(op.inputs):  # a RESHAPE only this op read goes
        if ctx.const(name) is None and ctx.sole_use(name):
            ctx.take(name)
    y4 = ctx.tensor(f"{y}.image", next(iter(image)))
    return [
        op.with_(inputs=tuple(sources), outputs=(y4,)),
        derive(op, "reshape", OpKind.RESHAPE, [y4], [y], shape=out),
    ]


def sink_reshape_mean(op: Op, ctx: Ctx) -> list[Op] | None:
    """MEAN over L of RESHAPE(x4 (N, C, 1, L)) -> RESHAPE(MEAN over H, W of x4): the same
    elements averaged (H is 1)."""
    x3, (y,) = op.inputs[0], op.outputs
    p = ctx.producer(x3)
    shape = ctx.shape(x3)
    if p is None or p.kind is not OpKind.RESHAPE or len(shape) != 3:
        return None
    x4 = p.inputs[0]
    if ctx.shape(x4) != (shape[0], shape[1], 1, shape[2]) or MeanAttrs.of(op).axes != (2,):
        return None
    if ctx.sole_use(x3):
        ctx.take(x3)
    m4 = ctx.tensor(f"{y}.image", (shape[0], shape[1], 1, 1))
    return [
        op.with_(inputs=(x4,), outputs=(m4,), attrs=MeanAttrs(axes=(2, 3), keepdims=True)),
        derive(op, "reshape", OpKind.RESHAPE, [m4], [y], shape=ctx.shape(y)),
    ]


def reshape_of_reshape(op: Op, ctx: Ctx) -> list[Op] | None:
    """Only when the inner RESHAPE has other readers (else canonicalize_reshapes folds it)."""
    inner = ctx.producer(op.inputs[0])
    if inner is None or inner.kind is not OpKind.RESHAPE or ctx.sole_use(op.inputs[0]):
        return None
    src, (y,) = inner.inputs[0], op.outputs
    if ctx.shape(src) == ctx.shape(y) and y not in ctx.graph.outputs:
        ctx.rw.alias[y] = src
        return []
    return [op.with_(inputs=(src,))]


LIFT: list[Rule] = [
    (pat(*ELEMENTWISE), sink_reshape),  # f(RESHAPE(a4), ...) -> RESHAPE(f(a4, ...))
    (pat(OpKind.MEAN), sink_reshape_mean),  # MEAN_L(RESHAPE(x4)) -> RESHAPE(MEAN_HW(x4))
    (pat(OpKind.RESHAPE), reshape_of_reshape),  # RESHAPE(RESHAPE(x)) -> RESHAPE(x) / x
]
