"""The int8 kernel table and the helpers every kernel shares.

A kernel is `fn(op, args, arg_q, out_q, rounding, accumulator) -> int8 array`: `args` are the
op's inputs in op order (int8 activations and constants, int32 bias), `arg_q` their QuantParams,
`out_q` the output's, `rounding` "double" or "single", `accumulator` "saturate" or "wrap" (what
an int32 overflow in the requantization does; see `mdla_quant.arith`). Validation (readable
messages naming the op) is split from computation, as in TFLite's Prepare/Eval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, round_half_away, saturate
from mdla_quant.errors import KernelError

Kernel = Callable[[Op, list[Array], list[QuantParams | None], QuantParams, str, str], Array]
INT8_KERNELS: dict[OpKind, Kernel] = {}
# The 16x8 kernels (int16 activations, int8 weights, int64 bias: kernels/a16_*.py), run where an
# op's output is int16.
A16_KERNELS: dict[OpKind, Kernel] = {}


def kernel(
    *kinds: OpKind, table: dict[OpKind, Kernel] = INT8_KERNELS
) -> Callable[[Kernel], Kernel]:
    def register(fn: Kernel) -> Kernel:
        for kind in kinds:
            table[kind] = fn
        return fn

    return register


def fail(op: Op, why: str) -> KernelError:
    return KernelError(f"op `{op.name}` ({op.kind.name}): {why}", op.name)


def per_tensor(op: Op, q: QuantParams | None, what: str) -> tuple[np.float32, int]:
    """(scale as float32, zero point) of a per-tensor quantized operand."""
    if q is None or len(q.scale) != 1 or len(q.zero_point) != 1:
        raise fail(op, f"{what} needs per-tensor quantization parameters, got {q}")
    zp = int(q.zero_point[0])
    if not -128 <= zp <= 127 or not q.scale[0] > 0:
        raise fail(
            op,
            f"{what} has scale {q.scale[0]} / zero point {zp}: need scale > 0 "
            "and zero point in [-128, 127]",
        )
    return np.float32(q.scale[0]), zp


def same_params(op: Op, in_q: QuantParams | None, out_q: QuantParams, what: str) -> int:
    """Ops that move int8 values unchanged need identical in/out params; returns the zp."""
    s_in, z_in = per_tensor(op, in_q, what)
    s_out, z_out = per_tensor(op, out_q, "output")
    if (s_in, z_in) != (s_out, z_out):
        raise fail(
            op,
            f"{what} params ({s_in}, {z_in}) differ from the output's "
            f"({s_out}, {z_out}); the quantizer must give them one scale and zero point",
        )
    return z_out


def activation_range(
    op: Op, out_q: QuantParams, bounds: tuple[int, int] = (-128, 127)
) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: Q(f) = z + (int)roundf(f / s) in float32, within
    `bounds` (the output type's range: int8's, or int16's for the 16x8 kernels).

    NONE [lo, hi]; RELU [max(lo, Q(0)), hi]; RELU6 [max(lo, Q(0)), min(hi, Q(6))];
    RELU1 [max(lo, Q(-1)), min(hi, Q(1))].
    """
    scale, zp = per_tensor(op, out_q, "output")
    lo, hi = bounds

    def q(f: float) -> int:
        return zp + int(round_half_away(np.float32(f) / scale))

    fuse = op.fuse
    if fuse == "NONE":
        return lo, hi
    if fuse == "RELU":
        return max(lo, q(0.0)), hi
    if fuse == "RELU6":
        return max(lo, q(0.0)), min(hi, q(6.0))
    if fuse == "RELU1":
        return max(lo, q(-1.0)), min(hi, q(1.0))
    raise fail(op, f"unknown fused activation `{fuse}` (expected NONE, RELU, RELU1, RELU6)")


def int8_arg(op: Op, args: Sequence[Array], i: int) -> Array:
    return typed_arg(op, args, i, np.int8)


def typed_arg(op: Op, args: Sequence[Array], i: int, dtype: type, why: str = "") -> Array:
    """Input `i`, which must be of `dtype` (`why` says why in the error)."""
    if len(args) <= i:
        raise fail(op, f"expected at least {i + 1} input(s), got {len(args)}")
    x = args[i]
    if x.dtype != dtype:
        raise fail(op, f"input {i} must be {np.dtype(dtype).name}{why}, got {x.dtype}")
    return x


@dataclass(frozen=True, slots=True)
class Width:
    """The activation type a kernel body serves where int8 and 16x8 differ only in it: `arg`
    checks an operand's dtype, `same` that an input moved unchanged has the output's params
    (returning the zero point), `clamp_range` is the fused activation's range, `narrow`
    clamps and casts, `lowest` the type's minimum. int8's is `INT8`, 16x8's `a16_common.INT16`."""

    arg: Callable[[Op, Sequence[Array], int], Array]
    same: Callable[[Op, QuantParams | None, QuantParams, str], int]
    clamp_range: Callable[[Op, QuantParams], tuple[int, int]]
    narrow: Callable[[Array, int, int], Array]
    lowest: int


INT8 = Width(int8_arg, same_params, activation_range, saturate, -128)
WidthBody = Callable[[Op, list[Array], list[QuantParams | None], QuantParams, Width], Array]


def for_width(body: WidthBody, width: Width) -> Kernel:
    """The kernel running `body` on `width`'s type (rounding and accumulator unused)."""

    def run(
        op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams, *_: str
    ) -> Array:
        return body(op, args, arg_q, out_q, width)

    run.__name__ = run.__qualname__ = body.__name__.removesuffix("_body")
    return run


def spatial_pad(x: Array, padding: Sequence[int], value: int) -> Array:
    """Pad an NHWC array by explicit (top, bottom, left, right)."""
    t, b, left, r = (int(p) for p in padding)
    if min(t, b, left, r) < 0:
        raise ValueError(f"negative padding {tuple(padding)}")
    if t == b == left == r == 0:
        return x
    n, h, w, c = x.shape
    out = np.empty((n, h + t + b, w + left + r, c), x.dtype)  # np.pad, without its overhead
    out[:, :t], out[:, t + h :], out[:, :, :left], out[:, :, left + w :] = (
        value,
        value,
        value,
        value,
    )
    out[:, t : t + h, left : left + w] = x
    return out


def windows(
    x: Array, kernel_hw: Sequence[int], stride: Sequence[int], dilation: Sequence[int] = (1, 1)
) -> Array:
    """Strided view (N, OH, OW, C, KH, KW) of an already padded NHWC array: element
    [n, y, x, c, i, j] is x[n, y*sh + i*dh, x*sw + j*dw, c] (read-only).

    Built by `as_strided` from x's strides, the view `sliding_window_view` gives (sliced by
    stride and dilation) without its per-call overhead; a window larger than the input is
    left to sliding_window_view's error."""
    (kh, kw), (sh, sw), (dh, dw) = kernel_hw, stride, dilation
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    if x.ndim != 4 or span[0] > x.shape[1] or span[1] > x.shape[2] or min(sh, sw, dh, dw) < 1:
        view = np.lib.stride_tricks.sliding_window_view(x, span, axis=(1, 2))
        return view[:, ::sh, ::sw, :, ::dh, ::dw]
    n, h, w, c = x.shape
    s_n, s_h, s_w, s_c = x.strides
    shape = (n, (h - span[0]) // sh + 1, (w - span[1]) // sw + 1, c, kh, kw)
    strides = (s_n, s_h * sh, s_w * sw, s_c, s_h * dh, s_w * dw)
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)


def binary_operands(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams
) -> tuple[tuple[Array, np.float32, int], tuple[Array, np.float32, int], tuple[np.float32, int]]:
    """ADD/SUB/MUL: both int8 inputs with their per-tensor (scale, zero point), and the
    output's; the input shapes must broadcast (numpy rules)."""
    x1, x2 = int8_arg(op, args, 0), int8_arg(op, args, 1)
    (s1, z1), (s2, z2) = per_tensor(op, arg_q[0], "input 0"), per_tensor(op, arg_q[1], "input 1")
    try:
        np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError as exc:
        raise fail(op, f"shapes {x1.shape} and {x2.shape} do not broadcast") from exc
    return (x1, s1, z1), (x2, s2, z2), per_tensor(op, out_q, "output")


def unary_operands(
    op: Op, args: list[Array], arg_q: list[QuantParams | None], out_q: QuantParams
) -> tuple[Array, tuple[np.float32, int], tuple[np.float32, int]]:
    """One int8 input with its per-tensor (scale, zero point), and the output's."""
    x = int8_arg(op, args, 0)
    return x, per_tensor(op, arg_q[0], "input"), per_tensor(op, out_q, "output")
