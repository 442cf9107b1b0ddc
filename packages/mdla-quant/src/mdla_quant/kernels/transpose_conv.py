"""TRANSPOSE_CONV_2D, int8 per-channel (TFLite reference_integer_ops/transpose_conv.h).

    acc_full[n, y*sh + i, x*sw + j, o] += sum_c w[o, i, j, c] * (in[n, y, x, c] - z_in)
    acc[n, oy, ox, o] = acc_full[n, oy + t, ox + l, o]      (explicit pads crop; taps landing
                                                             outside the output are dropped)
    out = clamp(MBQM(acc + bias[o], M_o, s_o) + z_out, act_min, act_max)
    (M_o, s_o) = QuantizeMultiplier(s_in * s_w[o] / s_out)    as CONV_2D
Filter (O, KH, KW, I) int8 symmetric; bias int32 (O,) with scale s_in * s_w[o].
Exactness: each product is below 2^15 and an output sums at most KH*KW*I of them; float64 sums
of such integers are exact below 2^53 (as conv.py), int32 overflow raises as TFLite would wrap.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.conv import MAX_TAPS, requantize
from mdla_quant.kernels.registry import fail, int8_arg, kernel, per_tensor


@kernel(OpKind.TRANSPOSE_CONV_2D)
def transpose_conv_2d(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, w = int8_arg(op, args, 0), int8_arg(op, args, 1)
    a = ConvAttrs.of(op)
    if a.groups != 1 or tuple(a.dilation) != (1, 1):
        raise fail(op, f"groups={a.groups}, dilation={a.dilation}: need 1 and (1, 1)")
    o, kh, kw, ci = w.shape
    if x.ndim != 4 or x.shape[3] != ci:
        raise fail(op, f"input {x.shape} does not match filter (O,KH,KW,I) {w.shape}")
    if kh * kw * ci >= MAX_TAPS:
        raise fail(op, f"{kh * kw * ci} taps per output exceed the exact range")
    (sh, sw), (t, b, left, r) = a.stride, a.padding
    n, h, wd, _ = x.shape
    full_h, full_w = (h - 1) * sh + kh, (wd - 1) * sw + kw
    if min(t, b, left, r) < 0 or full_h - t - b < 1 or full_w - left - r < 1:
        raise fail(op, f"pads {a.padding} must be >= 0 and leave an output")
    _, z_in = per_tensor(op, arg_q[0], "input")
    xc = x.astype(np.float64) - z_in
    full = np.zeros((n, full_h, full_w, o), np.float64)
    for i in range(kh):
        for j in range(kw):
            tap = xc @ w[:, i, j, :].astype(np.float64).T
            full[:, i : i + (h - 1) * sh + 1 : sh, j : j + (wd - 1) * sw + 1 : sw] += tap
    acc = full[:, t : full_h - b, left : full_w - r].astype(np.int64)
    return requantize(op, acc, args, arg_q, out_q, rounding, accumulator)
