"""CONV_2D, int8 per-channel (TFLite reference_integer_ops/conv.h).

    acc[n,y,x,o] = bias[o] + sum_{i,j,c} w[o,i,j,c] * (in[n, iy, ix, c] - z_in)
                   iy = y*sh + i*dh - t,  ix = x*sw + j*dw - l
                   (taps outside the image are skipped: the same as padding with z_in)
    out = clamp(MBQM(acc, M_o, s_o) + z_out, act_min, act_max)
    (M_o, s_o) = QuantizeMultiplier(s_in * s_w[o] / s_out)       in double, from float32 scales

Filter (O, KH, KW, I) int8, symmetric; bias int32 (O,) with scale s_in * s_w[o].

`requantize` is the definition; the kernel runs it through `plan.py` (float BLAS on the raw
codes, blocked, and the fused requantization of `requant.py`, exact where it applies) and
falls back to it on the exact int64 accumulator where the fused form does not apply.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, add_offset, f32, mbqm, quantize_multiplier, saturate, wrap32
from mdla_quant.kernels.memo import memo
from mdla_quant.kernels.plan import Plan, build_plan, gemm_conv
from mdla_quant.kernels.registry import (
    activation_range,
    fail,
    int8_arg,
    kernel,
    per_tensor,
    spatial_pad,
    windows,
)

# Exactness of the float64 matmul: |x - z_in| <= 255 and |w| <= 128, so each product is below
# 2^15 and a sum of K products below K * 2^15; every partial sum is an integer below 2^53 for
# K < 2^38 taps, so BLAS (any summation order) returns the exact integer. TFLite accumulates in
# int32; `check_int32` raises where TFLite's accumulator would overflow.
MAX_TAPS = 2**38


def channel_multipliers(
    op: Op,
    in_q: QuantParams | None,
    w_q: QuantParams | None,
    out_q: QuantParams,
    channels: int,
    rounding: str,
) -> tuple[Array, Array]:
    """Per-output-channel (M, s) for d_c = s_in * s_w[c] / s_out (PopulateConvolutionQuant...)."""
    s_in, _ = per_tensor(op, in_q, "input")
    s_out, _ = per_tensor(op, out_q, "output")
    if w_q is None or any(z != 0 for z in w_q.zero_point):
        raise fail(op, f"filter must be symmetric (zero point 0), got {w_q}")
    w_scale = f32(w_q.scale)
    if w_scale.size not in (1, channels):
        raise fail(op, f"filter has {w_scale.size} scales for {channels} output channels")
    real = f32(s_in) * np.broadcast_to(w_scale, (channels,)) / f32(s_out)
    return quantize_multiplier(real, rounding)


def check_int32(op: Op, acc: Array) -> Array:
    if acc.size and int(np.abs(acc).max()) > 2**31 - 1:
        raise fail(
            op,
            "the int32 accumulator overflows (TFLite would wrap): reduce the "
            "filter size or the weight magnitudes",
        )
    return acc


def bias_of(op: Op, args: Sequence[Array], channels: int) -> Array | None:
    """The op's int32 bias (channels,), or None without one."""
    if len(args) < 3 or args[2] is None:
        return None
    bias = args[2]
    if bias.dtype != np.int32 or bias.shape != (channels,):
        raise fail(op, f"bias must be int32 of shape ({channels},), got {bias.dtype} {bias.shape}")
    return bias


def add_bias(op: Op, acc: Array, args: Sequence[Array], channels: int) -> Array:
    bias = bias_of(op, args, channels)
    return acc if bias is None else acc + bias.astype(np.int64)


def requantize(
    op: Op,
    acc: Array,
    args: Sequence[Array],
    arg_q: Sequence[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    """bias, per-channel MBQM on the last axis, output offset, fused-activation clamp.

    Under accumulator "wrap" an int32 sum acc + bias out of range wraps as TFLite's int32
    accumulator does (modular addition: wrapping once at the end equals wrapping at every
    step); under "saturate" it is an error, where TFLite's result would depend on the wrap."""
    channels = acc.shape[-1]
    acc = add_bias(op, acc, args, channels)
    acc = wrap32(acc) if accumulator == "wrap" else check_int32(op, acc)
    m, s = channel_multipliers(op, arg_q[0], arg_q[1], out_q, channels, rounding)
    lo, hi = activation_range(op, out_q)
    _, z_out = per_tensor(op, out_q, "output")
    out = add_offset(mbqm(acc, m, s, rounding, accumulator), z_out, accumulator)
    return saturate(out, lo, hi)


def conv_plan(
    op: Op,
    taps: Array,
    args: Sequence[Array],
    arg_q: Sequence[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Plan:
    """The (cached) plan of a conv whose int8 filter, channel last, is `taps` (a depthwise
    conv's taps are summed in one accumulator: no float32 tap ranges)."""
    channels = taps.shape[-1]
    bias = bias_of(op, args, channels)
    fuse = repr(op.fuse)  # activation_range validates it on a build
    params = (op.kind, fuse, taps.shape, rounding, accumulator)

    def build() -> Plan:
        mults = channel_multipliers(op, arg_q[0], arg_q[1], out_q, channels, rounding)
        _, z_in = per_tensor(op, arg_q[0], "input")
        _, z_out = per_tensor(op, out_q, "output")
        act = activation_range(op, out_q)
        splittable = op.kind is not OpKind.DEPTHWISE_CONV_2D
        return build_plan(taps, bias, z_in, mults, rounding, z_out, act, accumulator, splittable)

    return memo([args[1], bias], params, build, (arg_q[0], arg_q[1], out_q))


def exact_acc(plan: Plan, raw: Array) -> Array:
    """The int64 accumulator without bias, sum w * (x - z_in), from the raw sums."""
    return np.asarray(raw.astype(np.int64) - plan.zero_term)


@kernel(OpKind.CONV_2D)
def conv_2d(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, w = int8_arg(op, args, 0), int8_arg(op, args, 1)
    a = ConvAttrs.of(op)
    if a.groups != 1:
        raise fail(op, f"groups={a.groups} is not supported (groups must be 1)")
    o, kh, kw, ci = w.shape
    if x.ndim != 4 or x.shape[3] != ci:
        raise fail(op, f"input {x.shape} does not match filter (O,KH,KW,I) {w.shape}")
    if kh * kw * ci >= MAX_TAPS:
        raise fail(op, f"{kh * kw * ci} taps per output exceed the exact range")
    _, z_in = per_tensor(op, arg_q[0], "input")
    xp = spatial_pad(x, a.padding, z_in)
    patches = windows(xp, (kh, kw), a.stride, a.dilation).transpose(0, 1, 2, 4, 5, 3)
    n, oh, ow = patches.shape[:3]
    if oh <= 0 or ow <= 0:
        raise fail(op, f"filter {kh}x{kw} does not fit the padded input {xp.shape}")
    plan = conv_plan(op, w.reshape(o, -1).T, args, arg_q, out_q, rounding, accumulator)
    if plan.requant is not None:
        out = np.empty((n, oh, ow, o), np.int8)
        gemm_conv(plan, plan.requant, patches, out)
        return out
    cols = patches.reshape(n * oh * ow, kh * kw * ci).astype(np.float64)
    raw = cols @ plan.weights.reshape(-1, o).astype(np.float64)
    acc = exact_acc(plan, raw).reshape(n, oh, ow, o)
    return requantize(op, acc, args, arg_q, out_q, rounding, accumulator)
