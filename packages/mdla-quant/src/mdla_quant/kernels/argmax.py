"""ARGMAX: the class map of a segmentation model's scores (a CPU partition's op: no Neuron
device here maps it, and NNAPI's ARGMAX writes int32, which no int8 graph holds).

    out = argmax(x, axis)        (the first index on ties)     out: int8, scale 1, zero point 0

Exact on the int8 codes: dequantization s * (q - z) is increasing in q for s > 0, so the
largest code is the largest value and equal codes are equal values; the index of the first
maximum is the float graph's whenever quantization kept the maximum apart (ties it creates go
to the first index, as numpy's argmax and the C kernel's loop do). The output params are fixed
to (1, 0) by the quantizer, so the dequantized output is the class index; at most 128 classes
fit an int8.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import ArgmaxAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.registry import fail, int8_arg, kernel, per_tensor

MAX_CLASSES = 128


@kernel(OpKind.ARGMAX)
def argmax(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int8_arg(op, args, 0)
    per_tensor(op, arg_q[0], "input")  # a positive scale: argmax of the codes is exact
    if per_tensor(op, out_q, "output") != (np.float32(1.0), 0):
        raise fail(op, "its output must be quantized with scale 1 and zero point 0 (class index)")
    attrs = ArgmaxAttrs.of(op)
    if not -x.ndim <= attrs.axis < x.ndim:
        raise fail(op, f"axis {attrs.axis} is outside the {x.ndim} axes of {x.shape}")
    if x.shape[attrs.axis] > MAX_CLASSES:
        raise fail(
            op, f"{x.shape[attrs.axis]} classes along axis {attrs.axis}: at most 128 fit int8"
        )
    idx = np.argmax(x, axis=attrs.axis)
    if attrs.keepdims:
        idx = np.expand_dims(idx, attrs.axis)
    return np.ascontiguousarray(idx.astype(np.int8))
