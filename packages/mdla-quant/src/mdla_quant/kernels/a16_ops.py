"""ADD, SUB, MUL, QUANTIZE and the value-moving ops, 16x8 (int16 activations, zero point 0).

ADD/SUB (TFLite add.cc Prepare with `pot_scale_int16 = false`, the general-scale int16 path of
reference_integer_ops/add.h): as the int8 formula with left_shift = 15 instead of 20,
    twice = 2 * max(s1, s2);  (M1, e1) = QM(s1 / twice);  (M2, e2) = QM(s2 / twice)
    (Mo, eo) = QM(twice / (2^15 * s_out))
    out = clamp(MBQM(MBQM(x1 * 2^15, M1, e1) +- MBQM(x2 * 2^15, M2, e2), Mo, eo))
    |x| <= 2^15, so x * 2^15 <= 2^30 and each scaled term below 2^29: all within int32.
MUL (reference_integer_ops/mul.h, int16): out = clamp(MBQM(x1 * x2, QM(s1 * s2 / s_out))), the
    multiplier from float32 scales in float32 as for int8 (`kernels/mul.py`); |x1 x2| <= 2^30.
QUANTIZE (quantize.cc, reference Requantize), int8 <-> int16:
    out = clamp(MBQM(x - z_in, QM(s_in / s_out)) + z_out)            (double from float32)
RESHAPE, CONCATENATION, PAD, MAX_POOL_2D, TRANSPOSE, RESIZE_NEAREST_NEIGHBOR: the values move
    unchanged (input params = output's; the resize's source indices are `kernels/resize_nearest`'s).
MEAN (reference/reduce.h QuantizedMeanOrSum, int16 in and out): the int8 formula of
    `kernels/mean.py` with zero points 0: (M, s) = QM(s_in / s_out); k = min(floor(log2 n), 32,
    31 + s); out = clamp(MBQM(sum x, floor(M 2^k / n), s - k)); the int32 sum is exact for
    n <= 2^16 elements (|x| <= 2^15).
AVERAGE_POOL_2D (reference_integer_ops/pooling.h, int16): acc = sum of the taps inside the image
    (int32), n their count, out = (acc > 0 ? (acc + n/2) / n : (acc - n/2) / n), C truncation.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import AxisAttrs, MeanAttrs, PadAttrs, ReshapeAttrs, ResizeAttrs, TransposeAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.interp.resample import nearest_index
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, f32, mbqm, quantize_multiplier, saturate, saturate16
from mdla_quant.kernels.a16_common import activation_range16, int16_arg, kernel16, same16, sym16
from mdla_quant.kernels.pooling import _geometry
from mdla_quant.kernels.registry import fail, per_tensor, spatial_pad, windows

LEFT_SHIFT16 = 15


def _binary(op: Op, args: list[Array]) -> tuple[Array, Array]:
    x1, x2 = int16_arg(op, args, 0).astype(np.int64), int16_arg(op, args, 1).astype(np.int64)
    try:
        np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError as exc:
        raise fail(op, f"input shapes {x1.shape} and {x2.shape} do not broadcast") from exc
    return x1, x2


@kernel16(OpKind.ADD, OpKind.SUB)
def add_sub_16x8(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x1, x2 = _binary(op, args)
    s1, s2 = f32(sym16(op, arg_q[0], "input 0")), f32(sym16(op, arg_q[1], "input 1"))
    twice = 2.0 * max(s1, s2)
    m1, e1 = quantize_multiplier(s1 / twice, rounding)
    m2, e2 = quantize_multiplier(s2 / twice, rounding)
    s_out = f32(sym16(op, out_q, "output"))
    mo, eo = quantize_multiplier(twice / (2.0**LEFT_SHIFT16 * s_out), rounding)
    a = mbqm(x1 << LEFT_SHIFT16, m1, e1, rounding)
    b = mbqm(x2 << LEFT_SHIFT16, m2, e2, rounding)
    raw = a + b if op.kind is OpKind.ADD else a - b
    lo, hi = activation_range16(op, out_q)
    return saturate16(mbqm(raw, mo, eo, rounding, accumulator), lo, hi)


@kernel16(OpKind.MUL)
def mul_16x8(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x1, x2 = _binary(op, args)
    s1, s2 = sym16(op, arg_q[0], "input 0"), sym16(op, arg_q[1], "input 1")
    real = np.float32(s1 * s2) / sym16(op, out_q, "output")  # float32 throughout
    m, s = quantize_multiplier(real, rounding)
    lo, hi = activation_range16(op, out_q)
    return saturate16(mbqm(x1 * x2, m, s, rounding, accumulator), lo, hi)


@kernel16(OpKind.QUANTIZE)
def quantize_8_16(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = args[0]
    if x.dtype not in (np.int8, np.int16):
        raise fail(op, f"QUANTIZE requantizes int8 or int16, got {x.dtype}")
    s_in, z_in = per_tensor(op, arg_q[0], "input")
    s_out, z_out = per_tensor(op, out_q, "output")
    m, s = quantize_multiplier(f32(s_in) / f32(s_out), rounding)
    out = mbqm(x.astype(np.int64) - z_in, m, s, rounding, accumulator) + z_out
    if x.dtype == np.int16:  # int16 -> int8 (the output is int8 where the input is int16)
        return saturate(out)
    return saturate16(out)


def _moved(op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams) -> Array:
    x = int16_arg(op, args, 0)
    same16(op, arg_q[0], out_q, "input")
    return x


@kernel16(OpKind.RESHAPE)
def reshape_16(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, *_: str
) -> Array:
    x = _moved(op, args, arg_q, out_q)
    try:
        return x.reshape(ReshapeAttrs.of(op).shape)
    except ValueError as exc:
        raise fail(op, f"cannot reshape {x.shape} to {ReshapeAttrs.of(op).shape}") from exc


@kernel16(OpKind.CONCATENATION)
def concatenation_16(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, *_: str
) -> Array:
    xs = [int16_arg(op, args, i) for i in range(len(args))]
    for i, q in enumerate(arg_q):
        same16(op, q, out_q, f"input {i}")
    try:
        return np.concatenate(xs, axis=AxisAttrs.of(op).axis)
    except (ValueError, np.exceptions.AxisError) as exc:
        raise fail(op, f"cannot concatenate shapes {[x.shape for x in xs]}: {exc}") from exc


@kernel16(OpKind.PAD)
def pad_16(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, *_: str
) -> Array:
    x = _moved(op, args, arg_q, out_q)
    pads = list(PadAttrs.of(op).pads)
    if len(pads) != x.ndim or any(len(p) != 2 or min(p) < 0 for p in pads):
        raise fail(op, f"pads {pads} must give (before, after) >= 0 for each of {x.ndim} dims")
    return np.pad(x, pads, constant_values=0)


@kernel16(OpKind.MAX_POOL_2D)
def max_pool_16(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, *_: str
) -> Array:
    x = _moved(op, args, arg_q, out_q)
    kernel_hw, stride, padding = _geometry(op, x)
    xp = spatial_pad(x, padding, -32768)  # never wins: every window has a real tap
    lo, hi = activation_range16(op, out_q)
    return saturate16(windows(xp, kernel_hw, stride).max(axis=(4, 5)).astype(np.int64), lo, hi)


@kernel16(OpKind.AVERAGE_POOL_2D)
def average_pool_16(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, *_: str
) -> Array:
    x = _moved(op, args, arg_q, out_q)
    kernel_hw, stride, padding = _geometry(op, x)
    acc = windows(spatial_pad(x.astype(np.int64), padding, 0), kernel_hw, stride).sum(axis=(4, 5))
    inside = spatial_pad(np.ones((1, x.shape[1], x.shape[2], 1), np.int64), padding, 0)
    n = windows(inside, kernel_hw, stride).sum(axis=(4, 5))
    avg = np.sign(acc) * ((np.abs(acc) + n // 2) // n)  # == C's (acc +- n/2) / n
    lo, hi = activation_range16(op, out_q)
    return saturate16(avg, lo, hi)


@kernel16(OpKind.MEAN)
def mean_16(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int16_arg(op, args, 0)
    attrs = MeanAttrs.of(op)
    axes = tuple(sorted({a % x.ndim for a in attrs.axes})) if x.ndim else ()
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 0
    if not 1 <= n <= 2**16:
        raise fail(op, f"{n} reduced elements (axes {attrs.axes}): need 1 .. 2^16 (int32 sum)")
    s_in, s_out = sym16(op, arg_q[0], "input"), sym16(op, out_q, "output")
    m, s = quantize_multiplier(f32(s_in) / f32(s_out), rounding)
    k = min(n.bit_length() - 1, 32, 31 + int(s))
    m2, s2 = (int(m) << k) // n, int(s) - k
    total = x.sum(axis=axes, keepdims=attrs.keepdims, dtype=np.int64)
    return saturate16(mbqm(total, m2, s2, rounding, accumulator))


@kernel16(OpKind.TRANSPOSE)
def transpose_16(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, *_: str
) -> Array:
    x = _moved(op, args, arg_q, out_q)
    perm = tuple(TransposeAttrs.of(op).perm)
    if sorted(perm) != list(range(x.ndim)):
        raise fail(op, f"perm {perm} is not a permutation of the {x.ndim} axes of {x.shape}")
    return np.ascontiguousarray(x.transpose(perm))


@kernel16(OpKind.RESIZE_NEAREST_NEIGHBOR)
def resize_nearest_16(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, *_: str
) -> Array:
    x = _moved(op, args, arg_q, out_q)
    a = ResizeAttrs.of(op)
    (oh, ow), align, half = a.size, a.align_corners, a.half_pixel_centers
    if x.ndim != 4 or (align and half) or min(oh, ow) < 1:
        raise fail(op, f"input {x.shape}, size {(oh, ow)}, align {align}, half pixel {half}")
    rows = nearest_index(x.shape[1], oh, align, half)
    cols = nearest_index(x.shape[2], ow, align, half)
    return np.asarray(x[:, rows][:, :, cols])
