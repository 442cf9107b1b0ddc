"""LOGISTIC and TANH, int8 through a 256-entry table built in float32 (TFLite LUTPopulate).

    x = (float)s_in * (float)(q - z_in)
    t = 1 / (1 + expf(-x))   (LOGISTIC)   or   tanhf(x)   (TANH)
    table[q] = clamp((int)roundf(t * (1.0f / s_out)) + z_out)        q in [-128, 127]

Output parameters are fixed by the spec: LOGISTIC (1/256, -128), TANH (1/128, 0).
expf and tanhf are the C library's (what LiteRT calls), so the table is bit-exact to it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, round_half_away
from mdla_quant.kernels.registry import fail, kernel, unary_operands
from mdla_quant.kernels.tables import unary_table

FIXED_OUTPUT = {OpKind.LOGISTIC: (1.0 / 256.0, -128), OpKind.TANH: (1.0 / 128.0, 0)}


def _libm(name: str) -> Callable[[float], float]:
    """float32 `name`f from the C math library; numpy float64 rounded to float32 without one."""
    path = ctypes.util.find_library("m")
    if path is not None:
        fn = getattr(ctypes.CDLL(path), name + "f")
        fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
        return lambda v: float(np.float32(fn(v)))
    npfn = getattr(np, name)
    return lambda v: float(np.float32(npfn(np.float64(v))))


EXPF, TANHF = _libm("exp"), _libm("tanh")


def _sigmoid_f32(x: np.float32) -> np.float32:
    one = np.float32(1.0)
    return one / (one + np.float32(EXPF(float(-x))))


def _tanh_f32(x: np.float32) -> np.float32:
    return np.float32(TANHF(float(x)))


@functools.cache
def table(kind: OpKind, s_in: np.float32, z_in: int, s_out: np.float32, z_out: int) -> Array:
    """The 256 int8 outputs for inputs -128..127 (index q + 128)."""
    f = _sigmoid_f32 if kind is OpKind.LOGISTIC else _tanh_f32
    inv = np.float32(1.0) / s_out
    out = np.empty(256, dtype=np.int64)
    for q in range(-128, 128):
        x = s_in * np.float32(q - z_in)
        out[q + 128] = int(round_half_away(f(x) * inv)) + z_out
    return np.clip(out, -128, 127).astype(np.int8)


def lut_activation_formula(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, (s_in, z_in), (s_out, z_out) = unary_operands(op, args, arg_q, out_q)
    want = FIXED_OUTPUT[op.kind]
    if (s_out, z_out) != (np.float32(want[0]), want[1]):
        raise fail(
            op,
            f"output must be quantized with scale {want[0]}, zero point {want[1]} "
            f"(the int8 spec), got ({s_out}, {z_out})",
        )
    return table(op.kind, s_in, z_in, s_out, z_out)[x.astype(np.int64) + 128]


lut_activation = kernel(OpKind.LOGISTIC, OpKind.TANH)(unary_table(lut_activation_formula))
