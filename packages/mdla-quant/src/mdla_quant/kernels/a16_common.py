"""What the 16x8 kernels share: int16 operands, symmetric params, the int16 activation range.

TFLite's 16x8 scheme: activations int16, symmetric (zero point 0); weights int8 symmetric;
bias int64 with scale s_in * s_w[o]. A kernel of `A16_KERNELS` runs where an op's output is
int16 (`mdla_quant.reference.run_op`); the quantizer puts a QUANTIZE wherever an int16 tensor
meets an int8 one, so every activation operand of such an op is int16.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, saturate16
from mdla_quant.kernels.registry import (
    A16_KERNELS,
    Kernel,
    Width,
    activation_range,
    fail,
    kernel,
    per_tensor,
    typed_arg,
)

INT16_MIN, INT16_MAX = -32768, 32767


def kernel16(*kinds: OpKind) -> Callable[[Kernel], Kernel]:
    """Register a 16x8 kernel (the int8 `kernel` decorator, into `A16_KERNELS`)."""
    return kernel(*kinds, table=A16_KERNELS)


def int16_arg(op: Op, args: Sequence[Array], i: int) -> Array:
    return typed_arg(op, args, i, np.int16, " (the op runs 16x8)")


def sym16(op: Op, q: QuantParams | None, what: str) -> np.float32:
    """The scale of a symmetric per-tensor int16 operand (zero point 0, as TFLite requires)."""
    scale, zp = per_tensor(op, q, what)
    if zp != 0:
        raise fail(op, f"{what} is int16 with zero point {zp}: 16x8 needs zero point 0")
    return scale


FIXED_OUTPUT16 = (1.0 / 32768.0, 0)  # LOGISTIC, TANH and SOFTMAX: TFLite's int16 output


def fixed_output16(op: Op, in_q: QuantParams | None, out_q: QuantParams) -> np.float32:
    """The input scale of an op whose int16 output params are fixed (`FIXED_OUTPUT16`),
    after checking both operands are symmetric int16 and the output's scale is the fixed one."""
    scale = sym16(op, in_q, "input")
    if sym16(op, out_q, "output") != np.float32(FIXED_OUTPUT16[0]):
        raise fail(op, f"the int16 output must have scale 1/32768, got {out_q.scale[0]}")
    return scale


def same16(op: Op, in_q: QuantParams | None, out_q: QuantParams, what: str) -> int:
    """Ops that move int16 values unchanged need the input's scale on the output; returns the
    zero point (0)."""
    if sym16(op, in_q, what) != sym16(op, out_q, "output"):
        raise fail(op, f"{what} and output scales differ; the quantizer must tie them")
    return 0


def activation_range16(op: Op, out_q: QuantParams) -> tuple[int, int]:
    """`activation_range` over [-32768, 32767], for a symmetric output (zero point 0)."""
    sym16(op, out_q, "output")
    return activation_range(op, out_q, (INT16_MIN, INT16_MAX))


INT16 = Width(int16_arg, same16, activation_range16, saturate16, INT16_MIN)


def bias64(op: Op, args: Sequence[Array], channels: int) -> Array | None:
    """The op's int64 bias (channels,), or None without one."""
    if len(args) < 3 or args[2] is None:
        return None
    bias = args[2]
    if bias.dtype != np.int64 or bias.shape != (channels,):
        raise fail(op, f"bias must be int64 of shape ({channels},), got {bias.dtype} {bias.shape}")
    return bias


__all__ = [
    "INT16",
    "Kernel",
    "activation_range16",
    "bias64",
    "int16_arg",
    "kernel16",
    "same16",
    "sym16",
]
