"""SOFTMAX, int8 (TFLite reference/softmax.h: gemmlowp fixed point; Prepare in activations.cc).

LiteRT's BUILTIN_REF runs this fixed-point kernel (its optimized kernels use a float table;
the two differ by 1 LSB near rounding ties, about 1 element in 10^4).

Prepare:  (M, l) = QuantizeMultiplier(min(beta * s_in * 2^26, 2^31 - 1))       l >= 0
          diff_min = -floor(31 * 2^26 / 2^l)                     (CalculateInputRadius, 5 bits)
Per row along `axis`, d_j = q_j - max q:
          z_j  = SRDHM(d_j * 2^l, M)                      Q5.26 scaled difference (<= 0)
          e_j  = exp_on_negative_values(z_j)              Q0.31
          S    = sum_{d_j >= diff_min} RDBPOT(e_j, 12)    Q12.19
          (R, b) = GetReciprocal(S): 1 / S = R * 2^-31 * 2^-b        (Newton-Raphson, Q0.31)
          out_j = d_j >= diff_min ? clamp(RDBPOT(SRDHM(R, e_j), b + 23) - 128) : -128
LiteRT's reference aborts when S > 512 (the final RDBPOT exponent b + 23 exceeds 31, possible
only in rows of more than 512 elements near the maximum); this kernel computes the same
formula exactly in int64 there instead.
"single" rounding swaps the input rescale for single-rounding MBQM and caps the multiplier at
2^30 - 1, as the TFLITE_SINGLE_ROUNDING build does; the gemmlowp parts are unchanged.
Output parameters are fixed: scale 1/256, zero point -128.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import SoftmaxAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import (
    INT32_MAX,
    INT32_MIN,
    Array,
    f32,
    mbqm,
    quantize_multiplier,
    rdbpot,
    saturate,
    srdhm,
)
from mdla_quant.kernels.registry import fail, int8_arg, kernel, per_tensor

DIFF_BITS, ACC_BITS = 5, 12  # integer bits of the scaled differences and of the exp sum
# exp(-2^k) in Q0.31 for k = -2 .. 4: applied for each set bit of the whole-quarters part.
_BARREL = (
    (-2, 1672461947),
    (-1, 1302514674),
    (0, 790015084),
    (1, 290630308),
    (2, 39332535),
    (3, 720401),
    (4, 242),
)


def _sat_shl(x: Array, e: int) -> Array:
    """SaturatingRoundingMultiplyByPOT with e > 0: x * 2^e clamped to int32."""
    return np.asarray(np.clip(x << e, INT32_MIN, INT32_MAX))


def _exp_quarter(a: Array) -> Array:
    """exp(a) for a in [-1/4, 0), Q0.31: Taylor series around -1/8 (gemmlowp)."""
    x = a + 2**28  # a + 1/8
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    poly = rdbpot(srdhm(rdbpot(x4, 2) + x3, 715827883) + x2, 1)  # x^4/24 + x^3/6 + x^2/2
    c = 1895147668  # exp(-1/8)
    return c + srdhm(np.int64(c), x + poly)


def exp_on_negative_values(a: Array) -> Array:
    """exp(a) for a <= 0 in Q5.26, result Q0.31 (gemmlowp exp_on_negative_values)."""
    frac = 31 - DIFF_BITS
    quarter = 1 << (frac - 2)
    rem_quarter = (a & (quarter - 1)) - quarter  # in [-1/4, 0)
    result = _exp_quarter(_sat_shl(rem_quarter, DIFF_BITS))
    whole = rem_quarter - a  # a non-negative multiple of 1/4
    for exponent, multiplier in _BARREL:
        bit = (whole & (1 << (frac + exponent))) != 0
        result = np.where(bit, srdhm(result, np.int64(multiplier)), result)
    return np.where(a == 0, INT32_MAX, result)


def _one_over_one_plus_x(a: Array) -> Array:
    """1 / (1 + a) for a in [0, 1), Q0.31 in and out (3 Newton-Raphson steps in Q2.29)."""
    total = a + INT32_MAX
    half = (total + np.where(total >= 0, 1, -1)) // 2  # RoundingHalfSum; total > 0 here
    x = 1515870810 + srdhm(half, np.int64(-1010580540))  # 48/17 - 32/17 * half
    for _ in range(3):
        x = x + _sat_shl(srdhm(x, 2**29 - srdhm(half, x)), 2)
    return _sat_shl(x, 1)


def _reciprocal(total: Array) -> tuple[Array, Array]:
    """GetReciprocal(S, 12 integer bits): (Q0.31 scale, bits over unit)."""
    clz = 32 - np.frexp(total.astype(np.float64))[1].astype(np.int64)  # exact: S < 2^31
    shifted = ((total << clz) & 0xFFFFFFFF) - 2**31
    return _one_over_one_plus_x(shifted), ACC_BITS - clz


@kernel(OpKind.SOFTMAX)
def softmax(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int8_arg(op, args, 0)
    s_in, _ = per_tensor(op, arg_q[0], "input")
    s_out, z_out = per_tensor(op, out_q, "output")
    if (s_out, z_out) != (np.float32(1.0 / 256.0), -128):
        raise fail(
            op,
            f"output must be quantized with scale 1/256, zero point -128 (the int8 "
            f"spec), got ({s_out}, {z_out})",
        )
    attrs = SoftmaxAttrs.of(op)
    axis = attrs.axis
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise fail(op, f"axis {axis} is out of range for input shape {x.shape}")
    cap = 2.0**30 - 1 if rounding == "single" else 2.0**31 - 1
    beta = f32(attrs.beta)
    m, left = quantize_multiplier(min(float(beta * f32(s_in) * 2.0**26), cap), rounding)
    diff_min = -int(np.floor(31 * 2.0**26 / 2.0 ** int(left)))
    rows = np.moveaxis(x.astype(np.int64), axis, -1)
    diff = rows - rows.max(axis=-1, keepdims=True)
    z = mbqm(diff, m, left, rounding)  # for s >= 0 this is SRDHM(d * 2^l, M) in "double"
    e = exp_on_negative_values(z)
    live = diff >= diff_min
    total = np.where(live, rdbpot(e, 12), 0).sum(axis=-1, keepdims=True)
    scale, bits = _reciprocal(total)
    out = rdbpot(srdhm(scale, e), bits + 31 - 8) - 128
    return np.moveaxis(saturate(np.where(live, out, -128)), -1, axis)
