"""Converters for the elementwise arithmetic users write by hand, on both import paths: `neg`
(`-x`), `abs`, `pow` with a constant exponent and `square`, and the tensors of one value shaped
like another (`zeros_like`, `ones_like`, `full_like`).

Each becomes ops the IR already has, exact in float:
    -x          MUL(x, -1)
    |x|         RELU(x) + RELU(-x)   (one of the two is 0)
    x ** 2      MUL(x, x); x ** 3 and x ** 4 by further MULs; x ** 1 is x
    x ** 0.5    SQRT; x ** -0.5 RSQRT; x ** -1 RECIPROCAL   (CPU tables, with --cpu)
    zeros_like  a constant of the node's shape (no op)

and F.normalize (the fx path; export decomposes it into these) as torch computes it:
x / max(sqrt(sum(x * x)), eps) for p = 2, x / max(sum(|x|), eps) for p = 1.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.ops import OpKind

_POWERS = "exponents 1, 2, 3, 4, 0.5, -0.5 and -1 map"


def _input(c: Ctx, args: tuple[Any, ...], kw: dict[str, Any]) -> str:
    return c.ref(args[0] if args else kw.get("input", kw.get("self")))


def neg(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.neg / -x / Tensor.neg, aten.neg: x times -1."""
    c.emit(OpKind.MUL, [_input(c, args, kw), c.ref(-1.0)], fuse="NONE")


def absolute(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.abs / Tensor.abs, aten.abs: relu(x) + relu(-x)."""
    c.emit(OpKind.ADD, _signed_parts(c, _input(c, args, kw), c.out_shape()), fuse="NONE")


def _signed_parts(c: Ctx, x: str, shape: tuple[int, ...]) -> list[str]:
    """relu(x) and relu(-x), whose sum is |x|."""
    minus = emit_shaped(c, OpKind.MUL, [x, c.ref(-1.0)], shape, "neg", fuse="NONE")
    low = emit_shaped(c, OpKind.RELU, [minus], shape, "negative")
    high = emit_shaped(c, OpKind.RELU, [x], shape, "positive")
    return [high, low]


def _exponent(c: Ctx, args: tuple[Any, ...], kw: dict[str, Any]) -> float:
    e = args[1] if len(args) > 1 else kw.get("exponent")
    if c.is_tensor(e):
        raise Unsupported("pow with a tensor exponent", f"use a constant exponent ({_POWERS})")
    value = c.value(e)
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise Unsupported("pow with an exponent per element", f"use one number ({_POWERS})")
        value = value.item()
    return float(value)


def power(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.pow / x ** e / Tensor.pow (x, e), aten.pow.Tensor_Scalar, for the exponents of the
    module docstring; a tensor base raised to a tensor is refused."""
    base = args[0] if args else kw["input"]
    if not c.is_tensor(base):
        raise Unsupported("a number raised to a tensor's power", f"raise a tensor ({_POWERS})")
    x, e = c.ref(base), _exponent(c, args, kw)
    if e in (2.0, 3.0, 4.0):
        _product(c, x, int(e))
    elif e == 1.0:
        c.emit(OpKind.IDENTITY, [x])
    elif e in (0.5, -0.5):
        c.emit(OpKind.SQRT if e > 0 else OpKind.RSQRT, [x])
    elif e == -1.0:
        c.emit(OpKind.RECIPROCAL, [x])
    else:
        raise Unsupported(f"pow with exponent {e:g}", f"{_POWERS}; write others as products")


def _product(c: Ctx, x: str, n: int) -> None:
    """x ** n (n in 2..4) as MULs: x*x, (x*x)*x, (x*x)*(x*x)."""
    if n == 2:
        c.emit(OpKind.MUL, [x, x], fuse="NONE")
        return
    sq = emit_shaped(c, OpKind.MUL, [x, x], c.out_shape(), "square", fuse="NONE")
    c.emit(OpKind.MUL, [sq, x if n == 3 else sq], fuse="NONE")


def square(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """torch.square / Tensor.square, aten.square: x * x."""
    _product(c, _input(c, args, kw), 2)


def filled(fill: float | None) -> Any:
    """zeros_like (0) / ones_like (1) / full_like (fill None: the call's fill_value), on both
    paths: a float32 constant of the node's shape, no op."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        node = c.node
        assert node is not None
        dtype = c.value(kw.get("dtype"))
        if dtype not in (None, torch.float32):
            raise Unsupported(f"a tensor of {dtype} (only float32 is imported)")
        given = args[1] if len(args) > 1 else kw.get("fill_value")
        value = fill if fill is not None else c.value(given)
        data = np.full(c.out_shape(), float(value), np.float32)
        c.refs[node] = c.const(node.name, data)

    return convert


def f_normalize(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """F.normalize (input, p=2.0, dim=1, eps=1e-12) for p 1 and 2 (module docstring)."""
    a = dict(zip(("input", "p", "dim", "eps"), args, strict=False)) | kw
    p, eps = float(c.value(a.get("p", 2.0))), float(c.value(a.get("eps", 1e-12)))
    if a.get("out") is not None or p not in (1.0, 2.0):
        raise Unsupported(f"F.normalize with p={p:g}", "p=2 (the default) and p=1 map")
    x, shape = c.ref(a["input"]), c.out_shape()
    dim = int(c.value(a.get("dim", 1))) % len(shape)
    if p == 2.0:
        terms = emit_shaped(c, OpKind.MUL, [x, x], shape, "square", fuse="NONE")
    else:
        parts = _signed_parts(c, x, shape)
        terms = emit_shaped(c, OpKind.ADD, parts, shape, "abs", fuse="NONE")
    kept = tuple(1 if i == dim else d for i, d in enumerate(shape))
    norm = emit_shaped(c, OpKind.REDUCE_SUM, [terms], kept, "sum", axes=(dim,), keepdims=True)
    if p == 2.0:
        norm = emit_shaped(c, OpKind.SQRT, [norm], kept, "norm")
    floor = emit_shaped(c, OpKind.CLAMP, [norm], kept, "clamp", lo=eps, hi=math.inf)
    c.emit(OpKind.DIV, [x, floor], fuse="NONE")
