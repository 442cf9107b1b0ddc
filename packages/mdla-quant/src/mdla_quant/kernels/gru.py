"""A float32 region of a CPU partition: DEQUANTIZE, GRU, FULLY_CONNECTED_F32,
CONCATENATION_F32 (issue 17).

A recurrent tail (LipNet's two bidirectional GRUs and its Linear) has no int8 form here and
gains nothing from one: it runs on the phone's CPU in float32 end to end, entered by one
DEQUANTIZE of the int8 tensor the NPU made, with float32 tensors between its ops and a float32
model output. Every value is defined to the last bit so that the C engine (csrc/cpu/gru.c,
built -std=c11, FP_CONTRACT OFF, no -ffast-math) reproduces it on any CPU:

    DEQUANTIZE  x = s * ((float)q - (float)z)                  (float32, mdla_ir.affine)
    DOT(w, v)   acc = w[0] * v[0]; for i in 1..n-1: acc = acc + w[i] * v[i]   (float32; each
                product rounded, then each sum: no FMA; the first product starts the sum, so
                a -0.0 product stays -0.0 as numpy's accumulate keeps it)
    FULLY_CONNECTED_F32  y[t, o] = DOT(W[o], x[t]) + b[o]
    CONCATENATION_F32    y = the inputs' float32 values joined along `axis`, unchanged
    GRU (one direction, h = 0 at the start; gate rows reset, update, new as torch.nn.GRU):
        gi[j] = DOT(W_ih[j], x_t) + b_ih[j];   gh[j] = DOT(W_hh[j], h) + b_hh[j]   (j < 3H)
        r = SIGMOID(gi_r + gh_r);   z = SIGMOID(gi_z + gh_z)
        n = TANH(gi_n + r * gh_n)
        h = (1 - z) * n + z * h      as a = 1 - z; b = a * n; c = z * h; h = b + c
      bidirectional: direction 1 runs over x reversed in time, its states put back in time
      order; y = [forward | backward] (T, 2H). Weights [D, 3H, I], [D, 3H, H]; biases [D, 3H].

SIGMOID and TANH are computed in double from EXP, a fixed formula of +, -, *, / and an exact
power-of-two scaling (no libm): libm's expf/tanhf differ between glibc versions, Android's
bionic and architectures (aarch64 glibc's expf may fuse), so reading them through ctypes, as
GELU reads erf, would tie the result to one library. The formula makes the phone's result the
host's, and it is accurate to ~1e-16 relative before the final rounding to float32:

    EXP(v)      v clamped to [-110, 110]; k = floor(v * LOG2E + 0.5);
                r = (v - k * LN2_HI) - k * LN2_LO     (LN2_HI has 21 trailing zero bits, so
                k * LN2_HI is exact for |k| < 2^21); p = Horner of sum r^j / j!, j = 0..13
                (|r| <= 0.35: the truncation is below 4e-18); EXP = ldexp(p, k)  (exact: the
                result is a normal double)
    SIGMOID(v)  (float)(1.0 / (1.0 + EXP(-(double)v)))
    TANH(v)     u = -2 |v|; m = e^u - 1: for |v| < 0.17 the Horner sum u * sum u^(j-1) / j!,
                j = 13..1 (no cancellation near 0), else EXP(u) - 1;
                t = -m / (2 + m); (float)copysign(t, v)

numpy's float64 and float32 +, -, *, / are IEEE 754 operations (correctly rounded, with or
without SIMD), floor and ldexp are exact, and `np.add.accumulate` adds strictly left to right;
so these vectorized lines compute exactly the C loops.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mdla_ir.affine import dequantize_output
from mdla_ir.attrs import AxisAttrs, GruAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import fail, per_tensor

LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01  # 0x3FE62E42FEE00000
LN2_LO = 1.90821492927058770002e-10
TANH_SERIES = 0.17  # below: e^u - 1 by its series (|u| < 0.34, where EXP's k is 0)
EXP_CLAMP = 110.0  # e^-110 rounds to float32 0: SIGMOID saturates exactly
# 1/j! for j = 13 .. 0, the Horner order (csrc/cpu/gru.c holds the same doubles)
EXP_COEFFS = tuple(1.0 / math.factorial(j) for j in range(13, -1, -1))


def ieee() -> np.errstate:
    """Overflow to inf and inf - inf = NaN taken as IEEE 754's results, without warnings."""
    return np.errstate(over="ignore", invalid="ignore")


FloatKernel = Callable[[Op, list[Array], list[QuantParams | None]], Array]
FLOAT32_KERNELS: dict[OpKind, FloatKernel] = {}


def float32_kernel(kind: OpKind) -> Callable[[FloatKernel], FloatKernel]:
    def register(fn: FloatKernel) -> FloatKernel:
        FLOAT32_KERNELS[kind] = fn
        return fn

    return register


def exp_f64(v: Array) -> Array:
    """EXP of the module docstring, elementwise over a float64 array."""
    x = np.asarray(v, np.float64)
    nan = np.isnan(x)
    v = np.clip(np.where(nan, 0.0, x), -EXP_CLAMP, EXP_CLAMP)  # NaN is returned as itself
    k = np.floor(v * LOG2E + 0.5)
    r = (v - k * LN2_HI) - k * LN2_LO
    p = np.full_like(r, EXP_COEFFS[0])
    for c in EXP_COEFFS[1:]:
        p = p * r + c
    out: Array = np.where(nan, x, np.ldexp(p, k.astype(np.int32)))
    return out


def widen(v: Array) -> Array:
    """float32 -> float64 as C's (double)v: a signalling NaN is quieted, no warning."""
    with np.errstate(invalid="ignore"):
        out: Array = np.asarray(v, np.float32).astype(np.float64)
    return out


def sigmoid_f32(v: Array) -> Array:
    e = exp_f64(-widen(v))
    out: Array = (1.0 / (1.0 + e)).astype(np.float32)
    return out


def tanh_f32(v: Array) -> Array:
    v64 = widen(v)
    a = np.abs(v64)
    u = -2.0 * a
    small = a < TANH_SERIES
    us = np.where(small, u, 0.0)  # the series only where it is taken (no overflow elsewhere)
    p = np.full_like(u, EXP_COEFFS[0])
    for c in EXP_COEFFS[1:13]:
        p = p * us + c
    m = np.where(small, p * us, exp_f64(u) - 1.0)
    out: Array = np.copysign(-m / (2.0 + m), v64).astype(np.float32)
    return out


def dot_rows(w: Array, v: Array) -> Array:
    """DOT(w[j], v) for every row j of w (rows, n): products, then sums left to right."""
    prods = (w * v[None, :]).astype(np.float32)
    out: Array = np.add.accumulate(prods, axis=1, dtype=np.float32)[:, -1]
    return out


def gru_direction_f32(x: Array, w_ih: Array, w_hh: Array, b_ih: Array, b_hh: Array) -> Array:
    """One direction of the module docstring's GRU over x (T, I) -> (T, H), float32."""
    hidden = w_hh.shape[1]
    h = np.zeros(hidden, np.float32)
    out = np.empty((x.shape[0], hidden), np.float32)
    one = np.float32(1.0)
    for t in range(x.shape[0]):
        gi = dot_rows(w_ih, x[t]) + b_ih
        gh = dot_rows(w_hh, h) + b_hh
        r = sigmoid_f32(gi[:hidden] + gh[:hidden])
        z = sigmoid_f32(gi[hidden : 2 * hidden] + gh[hidden : 2 * hidden])
        n = tanh_f32(gi[2 * hidden :] + r * gh[2 * hidden :])
        h = (one - z) * n + z * h
        out[t] = h
    return out


def gru_f32(x: Array, w_ih: Array, w_hh: Array, b_ih: Array, b_hh: Array) -> Array:
    """GRU over x (T, I) with weights stacked per direction ([D, 3H, I], ...) -> (T, D·H)."""
    f32 = [np.asarray(a, np.float32) for a in (x, w_ih, w_hh, b_ih, b_hh)]
    x, w_ih, w_hh, b_ih, b_hh = f32
    outs = []
    for d in range(w_ih.shape[0]):
        xd = x if d == 0 else x[::-1]
        with ieee():  # as gru.c computes them
            y = gru_direction_f32(xd, w_ih[d], w_hh[d], b_ih[d], b_hh[d])
        outs.append(y if d == 0 else y[::-1])
    return np.ascontiguousarray(np.concatenate(outs, axis=1))


def fc_f32(x: Array, w: Array, b: Array) -> Array:
    """FULLY_CONNECTED_F32 over the rows of x (..., I) -> (..., O)."""
    rows = np.asarray(x, np.float32).reshape(-1, x.shape[-1])
    w32, b32 = np.asarray(w, np.float32), np.asarray(b, np.float32)
    with ieee():
        out = np.stack([dot_rows(w32, row) + b32 for row in rows])
    return out.reshape(*x.shape[:-1], w.shape[0])


def _floats(op: Op, args: list[Array], n: int) -> list[Array]:
    if len(args) != n:
        raise fail(op, f"takes {n} inputs, got {len(args)}")
    for i, a in enumerate(args):
        if a.dtype != np.float32:
            raise fail(op, f"input {i} must be float32 (a float region of a CPU partition)")
    return args


@float32_kernel(OpKind.DEQUANTIZE)
def dequantize(op: Op, args: list[Array], arg_q: list[QuantParams | None]) -> Array:
    if len(args) != 1 or args[0].dtype != np.int8:
        raise fail(op, "DEQUANTIZE takes one int8 input")
    s, z = per_tensor(op, arg_q[0], "input")
    return dequantize_output(args[0], float(s), z)


@float32_kernel(OpKind.GRU)
def gru(op: Op, args: list[Array], arg_q: list[QuantParams | None]) -> Array:
    x, w_ih, w_hh, b_ih, b_hh = _floats(op, args, 5)
    dirs = 2 if GruAttrs.of(op).bidirectional else 1
    if w_ih.ndim != 3 or w_ih.shape[0] != dirs or x.ndim != 2:
        raise fail(op, f"x {x.shape}, w_ih {w_ih.shape}: want (T, I) and [{dirs}, 3H, I]")
    return gru_f32(x, w_ih, w_hh, b_ih, b_hh)


@float32_kernel(OpKind.FULLY_CONNECTED_F32)
def fully_connected_f32(op: Op, args: list[Array], arg_q: list[QuantParams | None]) -> Array:
    x, w, b = _floats(op, args, 3)
    return fc_f32(x, w, b)


@float32_kernel(OpKind.CONCATENATION_F32)
def concatenation_f32(op: Op, args: list[Array], arg_q: list[QuantParams | None]) -> Array:
    """The float32 values, joined along `axis` unchanged (float_region.float_concats)."""
    return np.concatenate(_floats(op, args, len(args)), axis=AxisAttrs.of(op).axis)
