"""HARD_SWISH, int8 in int16 fixed point (TFLite reference/hard_swish.h, HardSwishPrepare).

Prepare (float32): hires = s_in / 128, reluish_scale = 3 / 32768,
    (Mo, eo) = QM(hires / s_out),  (Mr, er) = QM(hires / reluish_scale),
    each multiplier narrowed to int16: M16 = min((M + 2^15) >> 16, 2^15 - 1).
Eval, per element (int16 values):
    v   = (x - z_in) * 128
    pre = SRDHM16(v, Mo16)
    r   = v;  er > 0: r = SatShl(r, er - 1);  r = SRDHM16(r, Mr16);  er > 0: r = SatShl(r, 1)
          er < 0: r = RDBPOT(r, -er)                       (r in [-1, 1] on the 2^15 scale)
    r   = (r + 2^15) >> 1                                  ([-1, 1] -> [0, 1])
    out = clamp(RDBPOT(trunc(r * pre / 2^15), -eo) + z_out)
SRDHM16(a, b) = trunc((a*b + (a*b >= 0 ? 2^14 : 1 - 2^14)) / 2^15), saturating at -2^15 * -2^15.
The registered kernel looks the formula up in its 256-entry table (kernels/tables.py).
"""

from __future__ import annotations

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, quantize_multiplier, rdbpot, saturate
from mdla_quant.kernels.registry import fail, kernel, unary_operands
from mdla_quant.kernels.tables import unary_table

I16_MIN, I16_MAX = -(2**15), 2**15 - 1


def _to_int16_multiplier(m: int) -> int:
    """DownScaleInt32ToInt16Multiplier: round the Q31 multiplier to Q15."""
    return I16_MAX if m >= 2**31 - 1 - 2**15 else (m + 2**15) >> 16


def _trunc_div(a: Array, d: int) -> Array:
    """C integer division (truncation toward zero)."""
    return np.asarray(np.sign(a) * (np.abs(a) // d))


def _srdhm16(a: Array, b: int) -> Array:
    ab = a * b
    out = _trunc_div(ab + np.where(ab >= 0, 2**14, 1 - 2**14), 2**15)
    return np.asarray(np.where((a == I16_MIN) & (b == I16_MIN), I16_MAX, out))


def _sat_shl16(a: Array, amount: int) -> Array:
    return np.asarray(np.clip(a << amount, I16_MIN, I16_MAX))


def hard_swish_formula(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, (s_in, z_in), (s_out, z_out) = unary_operands(op, args, arg_q, out_q)
    hires = np.float32(1.0 / 128.0) * s_in
    mo, eo = quantize_multiplier(float(hires / s_out))
    mr, er = quantize_multiplier(float(hires / np.float32(3.0 / 32768.0)))
    eo_, er_ = int(eo), int(er)
    if eo_ > 0:
        raise fail(
            op,
            f"output scale {s_out} is too small for input scale {s_in} "
            "(TFLite requires s_in / 128 <= s_out)",
        )
    mo16, mr16 = _to_int16_multiplier(int(mo)), _to_int16_multiplier(int(mr))
    v = (x.astype(np.int64) - z_in) * 128  # |v| <= 255 * 128 < 2^15
    pre = _srdhm16(v, mo16)
    r = v
    if er_ > 0:
        r = _sat_shl16(r, er_ - 1)
    r = _srdhm16(r, mr16)
    if er_ > 0:
        r = _sat_shl16(r, 1)
    if er_ < 0:
        r = rdbpot(r, -er_)
    r = (r + 2**15) >> 1
    out = rdbpot(_trunc_div(r * pre, 2**15), -eo_)
    out = ((out + z_out + 2**15) % 2**16) - 2**15  # int16 `+=` wraps, as the C does
    return saturate(out)


hard_swish = kernel(OpKind.HARD_SWISH)(unary_table(hard_swish_formula))
