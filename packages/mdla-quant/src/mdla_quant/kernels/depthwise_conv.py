"""DEPTHWISE_CONV_2D, int8 per-channel (TFLite reference_integer_ops/depthwise_conv.h).

    acc[n,y,x,c*m+k] = bias[c*m+k]
        + sum_{i,j} w[0,i,j,c*m+k] * (in[n, y*sh + i*dh - t, x*sw + j*dw - l, c] - z_in)
    out = clamp(MBQM(acc, M_oc, s_oc) + z_out, act_min, act_max)

Filter (1, KH, KW, C*m) int8 with per-channel scales on dim 3. Accumulation is exact (float32
or float64 on integers, `plan.py`; int64 in the fallback); `check_int32` raises where TFLite's
int32 accumulator would overflow. As CONV_2D, the kernel runs `conv.requantize` through the
fused form of `plan.py` where it applies and the definition on the int64 accumulator elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.conv import conv_plan, exact_acc, requantize
from mdla_quant.kernels.plan import depthwise
from mdla_quant.kernels.registry import fail, int8_arg, kernel, per_tensor, spatial_pad


@kernel(OpKind.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, w = int8_arg(op, args, 0), int8_arg(op, args, 1)
    kh, kw, oc = depthwise_filter(op, x, w)
    mult = oc // x.shape[3]
    a = ConvAttrs.of(op)
    if a.multiplier is not None and a.multiplier != mult:
        raise fail(op, f"multiplier={a.multiplier} but filter implies {mult}")
    _, z_in = per_tensor(op, arg_q[0], "input")
    xp = spatial_pad(x, a.padding, z_in)
    if mult > 1:
        xp = np.repeat(xp, mult, axis=3)  # channel c*m + k reads input channel c
    (sh, sw), (dh, dw) = a.stride, a.dilation
    oh, ow = depthwise_out_hw(op, xp, (kh, kw), a.stride, a.dilation)
    plan = conv_plan(op, w[0], args, arg_q, out_q, rounding, accumulator)
    if plan.requant is not None:
        out = np.empty((xp.shape[0], oh, ow, oc), np.int8)
        depthwise(plan, plan.requant, xp, (sh, sw), (dh, dw), out)
        return out
    raw = depthwise_acc(xp, w[0], a.stride, a.dilation, (oh, ow))
    return requantize(op, exact_acc(plan, raw), args, arg_q, out_q, rounding, accumulator)


def depthwise_filter(op: Op, x: Array, w: Array) -> tuple[int, int, int]:
    """(KH, KW, OC) of filter `w` (1, KH, KW, C*m) for the NHWC input `x` (C channels)."""
    _, kh, kw, oc = w.shape
    if x.ndim != 4 or w.shape[0] != 1 or oc % x.shape[3] != 0:
        raise fail(op, f"input {x.shape} does not match filter (1,KH,KW,C*m) {w.shape}")
    return kh, kw, oc


def depthwise_out_hw(
    op: Op, xp: Array, k: tuple[int, int], stride: Sequence[int], dilation: Sequence[int]
) -> tuple[int, int]:
    """(OH, OW) of a `k` filter over the padded `xp` (N, HP, WP, C)."""
    (kh, kw), (sh, sw), (dh, dw) = k, stride, dilation
    oh, ow = (
        (xp.shape[1] - dh * (kh - 1) - 1) // sh + 1,
        (xp.shape[2] - dw * (kw - 1) - 1) // sw + 1,
    )
    if oh <= 0 or ow <= 0:
        raise fail(op, f"filter {kh}x{kw} does not fit the padded input {xp.shape}")
    return oh, ow


def depthwise_acc(
    xp: Array, w: Array, stride: Sequence[int], dilation: Sequence[int], out: tuple[int, int]
) -> Array:
    """The int64 sum over taps of w[i, j] * xp[tap]: `xp` padded, channels repeated to the
    filter's (N, HP, WP, OC), `w` (KH, KW, OC), `out` the (OH, OW) it gives."""
    (sh, sw), (dh, dw), (oh, ow) = stride, dilation, out
    acc = np.zeros((xp.shape[0], oh, ow, w.shape[2]), dtype=np.int64)
    wq = w.astype(np.int64)
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            y0, x0 = i * dh, j * dw
            tap = xp[:, y0 : y0 + sh * (oh - 1) + 1 : sh, x0 : x0 + sw * (ow - 1) + 1 : sw]
            acc += tap.astype(np.int64) * wq[i, j]
    return acc
