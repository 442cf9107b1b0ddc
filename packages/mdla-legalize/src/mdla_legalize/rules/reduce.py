"""Reductions over any axes, on the NHWC device graph, as ops the MDLA maps.

A max over a contiguous run of axes is a MAX_POOL_2D whose one window covers the run: the
tensor viewed as [N, A, R, B] (A the axes before the run, R the run, B the axes after; a
RESHAPE, which keeps the memory order) pooled by a (1, R) window, then viewed as the result.
Over (H, W) of an NHWC map that is the (H, W) window itself. Axes that are not one run are
reduced run by run (max is associative). min(x) = -max(-x); sum(x) = mean(x) * count. Axes of
size one reduce nothing. The batch axis is never reduced (the importer refuses it).

Exactness: max and min pick values (the MUL by -1 negates exactly in float); the sum is the
float64 mean times the count, within 1 ulp of the float sum.
"""

from __future__ import annotations

import math

import numpy as np

from mdla_ir import Op, OpKind
from mdla_ir.attrs import MeanAttrs
from mdla_legalize.rules.base import Ctx, Rule, derive, pat


def _kept(op: Op, ctx: Ctx) -> tuple[int, ...]:
    shape = ctx.shape(op.inputs[0])
    return tuple(a for a in MeanAttrs.of(op).axes if shape[a % len(shape)] != 1)


def _reshape(
    op: Op, ctx: Ctx, x: str, shape: tuple[int, ...], suffix: str, out: str = ""
) -> tuple[list[Op], str]:
    """`x` viewed as `shape` (into `out` if given): the ops and the tensor."""
    if ctx.shape(x) == shape and not out:
        return [], x
    y = out or ctx.tensor(f"{op.outputs[0]}.{suffix}", shape)
    return [derive(op, suffix, OpKind.RESHAPE, [x], [y], shape=shape)], y


def _pool_run(op: Op, ctx: Ctx, lo: int, hi: int, last: bool) -> list[Op]:
    """MAX_POOL_2D over the axes lo..hi of the input as one window; into op's output when
    those are all its axes, else into a keepdims tensor that a REDUCE_MAX of the rest reads."""
    x, (y,) = op.inputs[0], op.outputs
    s = ctx.shape(x)
    n, a, r, b = s[0], math.prod(s[1:lo]), math.prod(s[lo : hi + 1]), math.prod(s[hi + 1 :])
    ops: list[Op] = []
    view = x
    if len(s) == 4 and (lo, hi) == (1, 2):
        kernel, pooled = (s[1], s[2]), (n, 1, 1, s[3])
    else:
        ops, view = _reshape(op, ctx, x, (n, a, r, b), "view")
        kernel, pooled = (1, r), (n, a, 1, b)
    p = y if last and pooled == ctx.shape(y) else ctx.tensor(f"{y}.pooled", pooled)
    ops.append(derive(op, "pool", OpKind.MAX_POOL_2D, [view], [p], kernel=kernel, stride=(1, 1)))
    kept = tuple(1 if lo <= i <= hi else d for i, d in enumerate(s))
    if last:
        return ops + ([] if p == y else _reshape(op, ctx, p, ctx.shape(y), "result", out=y)[0])
    more, t = _reshape(op, ctx, p, kept, "kept")
    rest = MeanAttrs.of(op)
    return [
        *ops,
        *more,
        derive(op, "rest", OpKind.REDUCE_MAX, [t], [y], axes=rest.axes, keepdims=rest.keepdims),
    ]


def _to_scalar(op: Op, ctx: Ctx) -> list[Op] | None:
    """A reduction to a rank-0 result: the same with kept (size-one) axes, then a MEAN of its
    one element to rank 0 (constants and RESHAPE's shape operand cannot be rank 0, MEAN's
    output can); None otherwise."""
    x, (y,) = op.inputs[0], op.outputs
    if ctx.shape(y) != ():
        return None
    rank = len(ctx.shape(x))
    kept = ctx.tensor(f"{y}.kept", (1,) * rank)
    attrs = {"axes": MeanAttrs.of(op).axes, "keepdims": True}
    to_scalar = {"axes": tuple(range(rank)), "keepdims": False}
    return [
        op.with_(outputs=(kept,), attrs=attrs),
        derive(op, "scalar", OpKind.MEAN, [kept], [y], **to_scalar),
    ]


def reduce_max_to_pool(op: Op, ctx: Ctx) -> list[Op] | None:
    """REDUCE_MAX(x, axes) -> RESHAPE, MAX_POOL_2D over the last run of axes, RESHAPE (and a
    REDUCE_MAX of the other runs, lowered on the next walk)."""
    scalar = _to_scalar(op, ctx)
    if scalar is not None:
        return scalar
    axes = sorted(a % len(ctx.shape(op.inputs[0])) for a in _kept(op, ctx))
    if 0 in axes:
        return None
    if not axes:
        return _reshape(op, ctx, op.inputs[0], ctx.shape(op.outputs[0]), "", out=op.outputs[0])[0]
    hi = lo = axes[-1]
    while lo - 1 in axes:
        lo -= 1
    return _pool_run(op, ctx, lo, hi, last=lo == axes[0])


def reduce_min_to_pool(op: Op, ctx: Ctx) -> list[Op] | None:
    """REDUCE_MIN(x) -> MUL(REDUCE_MAX(MUL(x, -1)), -1)."""
    scalar = _to_scalar(op, ctx)
    if scalar is not None:
        return scalar
    x, (y,) = op.inputs[0], op.outputs
    neg = ctx.tensor(f"{y}.negated", ctx.shape(x))
    top = ctx.tensor(f"{y}.max", ctx.shape(y))
    return [
        derive(op, "negate", OpKind.MUL, [x, _scalar(ctx, op, x, -1.0)], [neg], fuse="NONE"),
        derive(op, "max", OpKind.REDUCE_MAX, [neg], [top], **_attrs(op)),
        derive(op, "", OpKind.MUL, [top, _scalar(ctx, op, y, -1.0)], [y], fuse="NONE"),
    ]


def _scalar(ctx: Ctx, op: Op, like: str, value: float) -> str:
    """A constant `value` of `like`'s rank (at least 1), every dim 1."""
    data = np.full((1,) * max(1, len(ctx.shape(like))), value, np.float32)
    return ctx.add_const(f"{op.name}.times_{value:g}", data)


def reduce_sum_to_mean_mul(op: Op, ctx: Ctx) -> list[Op] | None:
    """REDUCE_SUM(x, axes) -> MUL(MEAN(x, axes), count)."""
    scalar = _to_scalar(op, ctx)
    if scalar is not None:
        return scalar
    x, (y,) = op.inputs[0], op.outputs
    s = ctx.shape(x)
    count = math.prod(s[a % len(s)] for a in MeanAttrs.of(op).axes)
    mean = ctx.tensor(f"{y}.mean", ctx.shape(y))
    return [
        derive(op, "mean", OpKind.MEAN, [x], [mean], **_attrs(op)),
        derive(op, "", OpKind.MUL, [mean, _scalar(ctx, op, y, float(count))], [y], fuse="NONE"),
    ]


def _attrs(op: Op) -> dict[str, object]:
    a = MeanAttrs.of(op)
    return {"axes": a.axes, "keepdims": a.keepdims}


REDUCE: list[Rule] = [
    (pat(OpKind.REDUCE_MAX), reduce_max_to_pool),  # REDUCE_MAX -> RESHAPE, MAX_POOL_2D, RESHAPE
    (pat(OpKind.REDUCE_MIN), reduce_min_to_pool),  # REDUCE_MIN(x) -> -REDUCE_MAX(-x)
    (pat(OpKind.REDUCE_SUM), reduce_sum_to_mean_mul),  # REDUCE_SUM(x) -> MEAN(x) * count
]
