"""Converters for torch.where and masked_fill on a comparison of one tensor with a number, on
both import paths:

    torch.where(x > t, x, 0.1 * x)      WHERE(x; gt, t, then 1*x + 0, else 0.1*x + 0)
    x.masked_fill(x < 0, 0.0)           WHERE(x; lt, 0, then 0*x + 0, else 1*x + 0)

A comparison (gt ge lt le eq ne, `t < x` read as `x > t`) emits no op: it is recorded as a
predicate on x, and a torch.where / masked_fill whose condition it is, and whose branches are
each x, a number times x, a number, or a constant of one value, is one elementwise function of
x: WHERE, a 256-entry int8 table on the CPU (exact; mdla_ir.functions), unless legalization
finds a LeakyReLU or ReLU in it (x on one side of 0, a * x on the other: PRELU or RELU, on the
MDLA). A comparison of two
tensors, or branches that are other tensors, make SELECT (`select.py`). Anything else that uses
a comparison (`(x > 0).float()`, logical ops) is refused with a fix.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import torch
from torch import fx

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.select import select
from mdla_ir.ops import OpKind

_FLIPPED = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge", "eq": "eq", "ne": "ne"}
_FORMS = "a comparison of a computed tensor with a number or a tensor of its shape"
_FIX = f"torch.where / masked_fill map when they take {_FORMS} (on the CPU: --cpu auto)"
aten = torch.ops.aten
_MULS: tuple[Any, ...] = (
    operator.mul,
    torch.mul,
    "mul",
    aten.mul.Tensor,
    aten.mul.Scalar,
)


def _number(c: Ctx, a: Any) -> float | None:
    """`a`'s value if it is one number (a scalar, a 0-d tensor, a constant of one value)."""
    if isinstance(a, fx.Node) and a in c.refs:
        data = c.tensors[c.refs[a]].data
        if data is None or data.size == 0 or not np.all(data == data.flat[0]):
            return None
        return float(data.flat[0])
    if isinstance(a, fx.Node) and a not in c.values:
        return None
    value = c.value(a)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool | int | float):
        return float(value)
    return None


def compare(name: str) -> Any:
    """x <name> t (or t <name> x, flipped): a predicate on x, no op."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        node = c.node
        assert node is not None
        a = args[0] if args else kw.get("input", kw.get("self"))
        b = args[1] if len(args) > 1 else kw.get("other")
        left, right = _number(c, a), _number(c, b)
        if isinstance(a, fx.Node) and right is not None and _variable(c, a):
            c.predicates[node] = (a, name, right)
        elif isinstance(b, fx.Node) and left is not None and _variable(c, b):
            c.predicates[node] = (b, _FLIPPED[name], left)
        elif (
            isinstance(a, fx.Node)
            and isinstance(b, fx.Node)
            and c.is_tensor(a)
            and c.is_tensor(b)
            and (_variable(c, a) or _variable(c, b))
        ):
            c.predicates[node] = (a, name, b)  # of two tensors: SELECT (select.py)
        else:
            raise Unsupported(f"a comparison ({name}) of no tensor the model computes", _FIX)

    return convert


def _variable(c: Ctx, a: Any) -> bool:
    """Whether `a` is a tensor the model computes (not a constant)."""
    return c.is_tensor(a) and c.tensors[c.refs[a]].data is None


def _branch(c: Ctx, a: Any, x: fx.Node) -> tuple[float, float]:
    """(scale, offset) with branch `a` = scale * x + offset."""
    if a is x:
        return 1.0, 0.0
    number = _number(c, a)
    if number is not None:
        return 0.0, number
    if isinstance(a, fx.Node) and a.target in _MULS and len(a.args) == 2:
        left, right = a.args
        if left is x and _number(c, right) is not None:
            return float(_number(c, right) or 0.0), 0.0
        if right is x and _number(c, left) is not None:
            return float(_number(c, left) or 0.0), 0.0
    raise Unsupported("a torch.where / masked_fill branch that is not x, c * x or a number", _FIX)


def _emit(c: Ctx, cond: Any, then: Any, other: Any) -> None:
    predicate = c.predicates.get(cond) if isinstance(cond, fx.Node) else None
    if predicate is None:
        raise Unsupported("a torch.where / masked_fill condition that is not a comparison", _FIX)
    x, name, threshold = predicate
    node = c.node
    assert node is not None
    if isinstance(threshold, fx.Node):
        select(c, x, name, threshold, then, other)
        return
    if tuple(c.tensors[c.ref(x)].shape) != c.out_shape():
        select(c, x, name, threshold, then, other)  # the table maps x's own shape only
        return
    try:
        p, q = _branch(c, then, x)
        r, s = _branch(c, other, x)
    except Unsupported:  # branches that are not functions of x: the four-tensor form
        select(c, x, name, threshold, then, other)
        return
    c.emit(
        OpKind.WHERE,
        [c.ref(x)],
        compare=name,
        threshold=threshold,
        then_scale=p,
        then_offset=q,
        else_scale=r,
        else_offset=s,
    )


def where(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.where (condition, input, other), aten.where.self/ScalarOther/ScalarSelf/Scalar."""
    a = dict(zip(("condition", "input", "other"), args, strict=False)) | kw
    _emit(c, a["condition"], a["input"], a["other"])


def on_predicate(mapped: Any, other: Any) -> Any:
    """`mapped` when the call's condition (its first argument) is a comparison, else `other`
    (aten.where.self: a constant condition is export's select_scatter, importer/scatter.py)."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        cond = args[0] if args else kw.get("condition")
        chosen = mapped if isinstance(cond, fx.Node) and cond in c.predicates else other
        chosen(c, m, args, kw)

    return convert


def where_method(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """Tensor.where (self, condition, other): self where condition holds, else other."""
    a = dict(zip(("self", "condition", "other"), args, strict=False)) | kw
    _emit(c, a["condition"], a["self"], a["other"])


def masked_fill(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """x.masked_fill (mask, value), torch.masked_fill, aten.masked_fill.Scalar/Tensor: value
    where mask holds, else x."""
    a = dict(zip(("input", "mask", "value"), args, strict=False)) | kw
    _emit(c, a["mask"], a["value"], a.get("input", a.get("self")))


def to_float(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """Tensor.float: the identity on a float32 tensor; of a comparison, refused with the
    torch.where that computes `(x > t).float() * x`."""
    c.emit(OpKind.IDENTITY, [c.ref(args[0])])
