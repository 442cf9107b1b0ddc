"""LAYER_NORM and GELU: the ops a CPU partition computes in float32 (issue 17), int8 around them.

The MDLA has no RSQRT and no EXP (silicon fact 2), and neither op has an int8 kernel anywhere in
this project; on the CPU each runs as DEQUANTIZE -> float32 kernel -> QUANTIZE, with the int8
parameters the quantizer calibrated for its input and output. Every step is defined down to
the order of the float32 operations, so that the C engine (no -ffast-math, -ffp-contract=off:
no fused multiply-add) reproduces these results bit for bit; float32 +, -, *, / and sqrt are
correctly rounded in IEEE 754, so a fixed order fixes the result.

    DEQUANTIZE  x[i] = (float)s_in * (float)(q[i] - z_in)                     (float32)
    LAYER_NORM  over each row of the n = prod(normalized_shape) trailing values:
                sum = 0; for i in 0..n-1: sum += x[i]          mean = sum / (float)n
                acc = 0; for i in 0..n-1: d = x[i] - mean; acc += d * d
                var = acc / (float)n;  inv = 1.0f / sqrtf(var + (float)eps)
                y[i] = ((x[i] - mean) * inv) * w[i] + b[i]     (w, b float32; absent = 1, 0)
    GELU        a 256-entry table over the int8 input, as LOGISTIC's (`lut.py`):
                x = DEQUANTIZE(q); y = (float)(0.5 * x * (1.0 + erf(x * M_SQRT1_2)))  (double,
                erf is the C library's, read through ctypes: the engine calls the same one)
    QUANTIZE    q = clamp((int)roundf(y / s_out) + z_out, -128, 127)       (mdla_ir.affine)

Constants of these ops (LayerNorm's weight and bias) stay float32: the quantizer leaves them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
from collections.abc import Callable

import numpy as np

from mdla_ir.affine import dequantize_output, quantize_input
from mdla_ir.attrs import NormAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import fail, kernel, unary_operands


def _libm_erf() -> Callable[[float], float]:
    """double erf(double) of the C library (math.erf where there is none to load)."""
    path = ctypes.util.find_library("m")
    if path is None:
        return math.erf
    fn = ctypes.CDLL(path).erf
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
    return lambda v: float(fn(v))


ERF = _libm_erf()


def _float_args(op: Op, args: list[Array], first: int) -> list[Array]:
    consts = []
    for i, a in enumerate(args[first:], start=first):
        if a.dtype != np.float32:
            raise fail(op, f"input {i} must be float32 (a CPU float op's constant), got {a.dtype}")
        consts.append(a)
    return consts


def normalize_rows(rows: Array, eps: float) -> Array:
    """(x - mean) * 1 / sqrt(var + eps) of each row of a float32 [rows, n] array, every step
    in float32 and in C's order: np.add.accumulate adds strictly left to right (no pairwise
    summation), as the engine's loops do (LAYER_NORM and GROUP_NORM share it)."""
    nf = np.float32(rows.shape[1])
    total = np.add.accumulate(rows, axis=1, dtype=np.float32)[:, -1]
    mean = (total / nf).astype(np.float32)[:, None]
    d = (rows - mean).astype(np.float32)
    var = (np.add.accumulate(d * d, axis=1, dtype=np.float32)[:, -1] / nf).astype(np.float32)
    inv = (np.float32(1.0) / np.sqrt(var + np.float32(eps))).astype(np.float32)[:, None]
    out: Array = (d * inv).astype(np.float32)
    return out


def layer_norm_f32(x: Array, n: int, eps: float, w: Array | None, b: Array | None) -> Array:
    """The float32 LayerNorm of the module docstring over the last `n` values of each row."""
    y = normalize_rows(x.astype(np.float32).reshape(-1, n), eps)
    if w is not None:
        y = (y * w.reshape(1, n)).astype(np.float32)
    if b is not None:
        y = (y + b.reshape(1, n)).astype(np.float32)
    out: Array = y.reshape(x.shape)
    return out


@kernel(OpKind.LAYER_NORM)
def layer_norm(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    q, (s_in, z_in), (s_out, z_out) = unary_operands(op, args, arg_q, out_q)
    attrs = NormAttrs.of(op)
    shape = tuple(attrs.normalized_shape or ())
    if not shape or tuple(q.shape[-len(shape) :]) != shape:
        raise fail(op, f"normalized shape {shape} is not the trailing shape of {q.shape}")
    n = math.prod(shape)
    consts = _float_args(op, args, 1)
    for c in consts:
        if c.size != n:
            raise fail(op, f"weight/bias of {c.size} values, normalized shape has {n}")
    w = consts[0] if consts else None
    b = consts[1] if len(consts) > 1 else None
    x = dequantize_output(q, float(s_in), z_in)
    return quantize_input(layer_norm_f32(x, n, attrs.eps, w, b), s_out, z_out)


def gelu_f32(x: np.float32) -> np.float32:
    """GELU of one float32 value: double 0.5 * x * (1 + erf(x / sqrt 2)), rounded to float32."""
    v = float(x)
    return np.float32(0.5 * v * (1.0 + ERF(v * 0.7071067811865476)))


@functools.cache
def gelu_table(s_in: np.float32, z_in: int, s_out: np.float32, z_out: int) -> Array:
    """The 256 int8 GELU outputs for the inputs -128..127 (index q + 128)."""
    xs = dequantize_output(np.arange(-128, 128), float(s_in), z_in)
    ys = np.array([gelu_f32(x) for x in xs], dtype=np.float32)
    return quantize_input(ys, s_out, z_out)


@kernel(OpKind.GELU)
def gelu(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    """y = table[q + 128]; the table is the op's second input when the graph carries one (what
    `with_gelu_tables` attaches and the manifest stores), else computed here."""
    q, (s_in, z_in), (s_out, z_out) = unary_operands(op, args[:1], arg_q[:1], out_q)
    table = gelu_table(s_in, z_in, s_out, z_out)
    if len(args) > 1 and not np.array_equal(args[1], table):
        raise fail(op, "its table is not the GELU of its input and output parameters")
    out: Array = table[q.astype(np.int64) + 128]
    return out
