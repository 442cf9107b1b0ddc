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
    unchanged (input params = output's; the resize's source indices are `kernels/resize_nearest`'s);
    all but the resize run the int8 kernels' bodies on int16 (`registry.Width`, `INT16`).
MEAN (reference/reduce.h QuantizedMeanOrSum, int16 in and out): the int8 formula of
    `kernels/mean.py` with zero points 0: (M, s) = QM(s_in / s_out); k = min(floor(log2 n), 32,
    31 + s); out = clamp(MBQM(sum x, floor(M 2^k / n), s - k)); the int32 sum is exact for
    n <= 2^16 elements (|x| <= 2^15).
RESIZE_BILINEAR (reference_ops ResizeBilinearInteger, int16): the int8 kernel's Q10 weights and
    rounding of `kernels/resize_bilinear`, the Q20 sum in int64 (|v| <= 2^35); no clamp (the
    sum is a convex combination of int16 codes).
PRELU (reference_ops BroadcastPrelu4DSlow, int16): `kernels/prelu`'s formula with zero points 0
    and alpha int8 (asymmetric, as for int8): LiteRT 2.3.0's int16 PRELU reads alpha's data as
    int8 codes whatever the tensor's type (an int16 alpha gives x times its low bytes), so the
    quantizer keeps a 16x8 PRELU's alpha int8 (`a16.INT8_OPERANDS`); |x (alpha - z)| < 2^23.
AVERAGE_POOL_2D (reference_integer_ops/pooling.h, int16): acc = sum of the taps inside the image
    (int32), n their count, out = (acc > 0 ? (acc + n/2) / n : (acc - n/2) / n), C truncation
    (the int8 kernel's body, `kernels/pooling.py`).
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import MeanAttrs, ResizeAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.interp.resample import nearest_index
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, f32, mbqm, quantize_multiplier, saturate, saturate16
from mdla_quant.kernels.a16_common import INT16, activation_range16, int16_arg, kernel16, sym16
from mdla_quant.kernels.mean import mean_multiplier
from mdla_quant.kernels.movement import concatenation_body, pad_body, reshape_body
from mdla_quant.kernels.pooling import average_pool_body, max_pool_body
from mdla_quant.kernels.prelu import prelu_body
from mdla_quant.kernels.registry import fail, for_width, per_tensor, typed_arg
from mdla_quant.kernels.resize_bilinear import bilinear, resize_operands
from mdla_quant.kernels.transpose import transpose_body

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
    m2, s2 = mean_multiplier(s_in, s_out, n, rounding)  # int8's (M', s')
    total = x.sum(axis=axes, keepdims=attrs.keepdims, dtype=np.int64)
    return saturate16(mbqm(total, m2, s2, rounding, accumulator))


@kernel16(OpKind.RESIZE_NEAREST_NEIGHBOR)
def resize_nearest_16(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, *_: str
) -> Array:
    x = int16_arg(op, args, 0)
    INT16.same(op, arg_q[0], out_q, "input")
    a = ResizeAttrs.of(op)
    (oh, ow), align, half = a.size, a.align_corners, a.half_pixel_centers
    if x.ndim != 4 or (align and half) or min(oh, ow) < 1:
        raise fail(op, f"input {x.shape}, size {(oh, ow)}, align {align}, half pixel {half}")
    rows = nearest_index(x.shape[1], oh, align, half)
    cols = nearest_index(x.shape[2], ow, align, half)
    return np.asarray(x[:, rows][:, :, cols])


# The value-moving ops: the int8 kernels' bodies on int16 (`Width`).
for kind, body in (
    (OpKind.RESHAPE, reshape_body),
    (OpKind.CONCATENATION, concatenation_body),
    (OpKind.PAD, pad_body),
    (OpKind.TRANSPOSE, transpose_body),
    (OpKind.MAX_POOL_2D, max_pool_body),
    (OpKind.AVERAGE_POOL_2D, average_pool_body),
):
    kernel16(kind)(for_width(body, INT16))


@kernel16(OpKind.RESIZE_BILINEAR)
def resize_bilinear_16(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x, size, align, half = resize_operands(op, args, arg_q, out_q, INT16)
    return bilinear(x, size, align, half, rounding, np.int64).astype(np.int16)


@kernel16(OpKind.PRELU)
def prelu_16(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int16_arg(op, args, 0)
    alpha = typed_arg(op, args, 1, np.int8, " (a 16x8 PRELU's alpha stays int8)")
    sym16(op, arg_q[0], "input")
    sym16(op, out_q, "output")
    return saturate16(prelu_body(op, x, alpha, arg_q, out_q, rounding, accumulator))
