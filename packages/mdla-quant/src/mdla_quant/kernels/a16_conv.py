"""CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED, 16x8 (TFLite reference_integer_ops/conv.h,
depthwise_conv.h and fully_connected.h, their int16-input templates with int64 accumulators).

    acc[o] = bias64[o] + sum w[o, taps] * x[taps]          int64; zero points are 0 (no offsets);
                                                          padding taps are skipped (= real 0)
    conv, depthwise:  out = clamp(MBQM64(acc, M_o, s_o), act_min, act_max)     int16
                      (M_o, s_o) = QuantizeMultiplier(s_in * s_w[o] / s_out), double from float32;
                      MBQM64 is the int64 overload (`arith.mbqm64`: the multiplier cut to 16 bits)
    fully connected:  out = clamp(round_half_away((double)acc * (s_in * s_w[o] / s_out)))
                      (LiteRT 2.3.0 requantizes FC in float64, for int16 as for int8)

Exactness: |x| <= 2^15 and |w| <= 2^7, so every product is below 2^22 and a sum of K < 2^31 of
them below 2^53: float64 BLAS returns the exact integer. TFLite asserts |acc| < 2^47 before
MBQM64; the quantizer's biases hold int32 values (`quantize.BIAS_LIMIT`), far below it.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, f32, mbqm64, round_half_away, saturate16
from mdla_quant.kernels.a16_common import activation_range16, bias64, int16_arg, kernel16, sym16
from mdla_quant.kernels.conv import channel_multipliers
from mdla_quant.kernels.depthwise_conv import (
    depthwise_acc,
    depthwise_filter,
    depthwise_out_hw,
)
from mdla_quant.kernels.registry import fail, int8_arg, spatial_pad, windows

MAX_TAPS16 = 2**31


def _requantize(
    op: Op, acc: Array, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams
) -> Array:
    """bias, per-channel MBQM64 on the last axis, fused-activation clamp."""
    channels = acc.shape[-1]
    bias = bias64(op, args, channels)
    if bias is not None:
        acc = acc + bias
    if acc.size and int(np.abs(acc).max()) >= 2**47:
        raise fail(op, "the int64 accumulator exceeds 2^47, TFLite's bound for MBQM64")
    sym16(op, arg_q[0], "input")
    m, s = channel_multipliers(op, arg_q[0], arg_q[1], out_q, channels, "double")
    lo, hi = activation_range16(op, out_q)
    return saturate16(mbqm64(acc, m, s), lo, hi)


@kernel16(OpKind.CONV_2D)
def conv_2d_16x8(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, w = int16_arg(op, args, 0), int8_arg(op, args, 1)
    a = ConvAttrs.of(op)
    o, kh, kw, ci = w.shape
    if a.groups != 1 or x.ndim != 4 or x.shape[3] != ci or kh * kw * ci >= MAX_TAPS16:
        raise fail(op, f"input {x.shape} does not match filter (O,KH,KW,I) {w.shape}, groups 1")
    patches = windows(spatial_pad(x, a.padding, 0), (kh, kw), a.stride, a.dilation)
    patches = patches.transpose(0, 1, 2, 4, 5, 3)
    n, oh, ow = patches.shape[:3]
    if oh <= 0 or ow <= 0:
        raise fail(op, f"filter {kh}x{kw} does not fit the padded input")
    cols = patches.reshape(n * oh * ow, kh * kw * ci).astype(np.float64)
    acc = (cols @ w.reshape(o, -1).T.astype(np.float64)).astype(np.int64)
    return _requantize(op, acc.reshape(n, oh, ow, o), args, arg_q, out_q)


@kernel16(OpKind.DEPTHWISE_CONV_2D)
def depthwise_conv_2d_16x8(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, w = int16_arg(op, args, 0), int8_arg(op, args, 1)
    kh, kw, oc = depthwise_filter(op, x, w)
    a = ConvAttrs.of(op)
    xp = np.repeat(spatial_pad(x, a.padding, 0), oc // x.shape[3], axis=3)  # c*m+k reads c
    out_hw = depthwise_out_hw(op, xp, (kh, kw), a.stride, a.dilation)
    acc = depthwise_acc(xp, w[0], a.stride, a.dilation, out_hw)
    return _requantize(op, acc, args, arg_q, out_q)


@kernel16(OpKind.FULLY_CONNECTED)
def fully_connected_16x8(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, w = int16_arg(op, args, 0), int8_arg(op, args, 1)
    if w.ndim != 2 or x.shape[-1] != w.shape[1] or w.shape[1] >= MAX_TAPS16:
        raise fail(op, f"input {x.shape} does not match filter (O, I) {w.shape}")
    o = w.shape[0]
    acc = (x.astype(np.float64) @ w.astype(np.float64).T).astype(np.int64)
    bias = bias64(op, args, o)
    acc = acc if bias is None else acc + bias
    w_q = arg_q[1]
    if w_q is None or any(z != 0 for z in w_q.zero_point) or len(w_q.scale) not in (1, o):
        raise fail(op, f"filter must be symmetric, per-tensor or per-channel on dim 0: {w_q}")
    real = f32(sym16(op, arg_q[0], "input")) * np.broadcast_to(f32(w_q.scale), (o,))
    real = real / f32(sym16(op, out_q, "output"))
    lo, hi = activation_range16(op, out_q)
    return saturate16(round_half_away(acc.astype(np.float64) * real).astype(np.int64), lo, hi)
