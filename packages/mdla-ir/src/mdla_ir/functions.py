"""The table group's smooth unary functions, defined once for the float interpreter and for the
int8 tables a CPU partition runs (mdla_quant.kernels.functions).

An int8 -> int8 unary function is exactly a 256-entry table: the quantizer evaluates the
function on the 256 dequantized input codes and quantizes the results once, and the table is
what the manifest carries (no engine evaluates these functions). Each is evaluated in float64
(numpy), then rounded to float32:

    ELU          scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1))
    SELU         ELU with alpha = 1.6732632423543772, scale = 1.0507009873554805
    CELU         max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    SOFTPLUS     x if beta * x > threshold else log1p(exp(beta * x)) / beta
    MISH         x * tanh(log1p(exp(x)))          (softplus with beta 1, threshold 20)
    LOG_SIGMOID  min(x, 0) - log1p(exp(-|x|))
    TANHSHRINK   x - tanh(x)
    SOFTSIGN     x / (1 + |x|)
    EXP, LOG, SQRT, RSQRT   exp(x), log(x), sqrt(x), 1 / sqrt(x)
    COS, SIN, TAN, ATAN     cos(x), sin(x), tan(x), arctan(x)   (radians)
    EXPM1, LOG1P            exp(x) - 1, log(1 + x)   (accurate near 0)
    RECIPROCAL   1 / x   (a DIV by an activation is a MUL by it)
    WHERE        then_scale * x + then_offset if x <compare> threshold
                 else else_scale * x + else_offset   (torch.where / masked_fill on one tensor)

WHERE compares the float32 value (an int8 code's dequantized value) with the float32 threshold,
as torch compares a float32 tensor with a number: a value equal to the threshold is not greater
and not less. Its coefficients are float32 too, as torch's float32 arithmetic holds them.

A result that is not a number (the log or square root of a negative value) is 0; an infinite
one saturates when quantized. GELU belongs to the group too; its table reads the C library's
erf (mdla_quant.kernels.float_ops).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mdla_ir.attrs import Attrs, FunctionAttrs, WhereAttrs
from mdla_ir.kinds import OpKind

F64 = np.ndarray[Any, np.dtype[np.float64]]
Function = Callable[[F64, Any], F64]
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _elu(x: F64, a: FunctionAttrs) -> F64:
    neg = a.alpha * np.expm1(np.minimum(x, 0.0) * a.input_scale)
    return np.asarray(a.scale * np.where(x > 0, x, neg))


def _softplus(x: F64, beta: float, threshold: float) -> F64:
    bx = beta * x
    soft = np.log1p(np.exp(np.minimum(bx, threshold))) / beta
    return np.asarray(np.where(bx > threshold, x, soft))


FUNCTIONS: dict[OpKind, Function] = {
    OpKind.ELU: _elu,
    OpKind.SELU: lambda x, a: _elu(x, FunctionAttrs(alpha=SELU_ALPHA, scale=SELU_SCALE)),
    OpKind.CELU: lambda x, a: (
        np.maximum(x, 0.0) + np.minimum(0.0, a.alpha * np.expm1(np.minimum(x, 0.0) / a.alpha))
    ),
    OpKind.SOFTPLUS: lambda x, a: _softplus(x, a.beta, a.threshold),
    OpKind.MISH: lambda x, a: x * np.tanh(_softplus(x, 1.0, 20.0)),
    OpKind.LOG_SIGMOID: lambda x, a: np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x))),
    OpKind.TANHSHRINK: lambda x, a: x - np.tanh(x),
    OpKind.SOFTSIGN: lambda x, a: x / (1.0 + np.abs(x)),
    OpKind.EXP: lambda x, a: np.exp(x),
    OpKind.LOG: lambda x, a: np.log(x),
    OpKind.SQRT: lambda x, a: np.sqrt(x),
    OpKind.RSQRT: lambda x, a: 1.0 / np.sqrt(x),
    OpKind.RECIPROCAL: lambda x, a: 1.0 / x,
    OpKind.COS: lambda x, a: np.cos(x),
    OpKind.SIN: lambda x, a: np.sin(x),
    OpKind.TAN: lambda x, a: np.tan(x),
    OpKind.ATAN: lambda x, a: np.arctan(x),
    OpKind.EXPM1: lambda x, a: np.expm1(x),
    OpKind.LOG1P: lambda x, a: np.log1p(x),
}
# each comparison by its name: WHERE against its threshold, SELECT (interp) of two tensors
COMPARES: dict[str, np.ufunc] = {
    "gt": np.greater,
    "ge": np.greater_equal,
    "lt": np.less,
    "le": np.less_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}


def where(x: F64, a: WhereAttrs) -> F64:
    """WHERE's function of `x` (module docstring)."""
    coefficients = (a.threshold, a.then_scale, a.then_offset, a.else_scale, a.else_offset)
    t, p, q, r, s = (float(np.float32(v)) for v in coefficients)
    taken = COMPARES[a.compare](np.asarray(x, np.float32).astype(np.float64), t)
    return np.asarray(np.where(taken, p * x + q, r * x + s))


FUNCTIONS[OpKind.WHERE] = where


def evaluate(kind: OpKind, x: np.ndarray[Any, Any], attrs: Attrs) -> np.ndarray[Any, Any]:
    """`kind`'s function of `x` in float64, rounded to float32 (NaN becomes 0)."""
    own = isinstance(attrs, FunctionAttrs | WhereAttrs)
    params: Any = attrs if own else FunctionAttrs()
    with np.errstate(all="ignore"):
        y = FUNCTIONS[kind](np.asarray(x, dtype=np.float64), params)
        out = np.asarray(y, dtype=np.float64).astype(np.float32)
    out[np.isnan(out)] = 0.0
    return out
