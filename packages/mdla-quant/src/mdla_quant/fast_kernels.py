"""Float interpreter kernels in C for calibration, each bit-identical to mdla_ir's.

    evaluate(graph, inputs, keep=(), observe=observe, kernels=calibration_kernels())

`calibration_kernels()` maps an op kind to a kernel that gives exactly the values of the
interpreter's own (`mdla_ir.interp`), faster; it is empty without a C compiler. Now:
DEPTHWISE_CONV_2D on float32 operands in NHWC (`csrc/depthwise.c`: the same float32 products
and sums in the same order, one pass over the output instead of two numpy passes per tap);
LOGISTIC and HARD_SWISH on float32 (`csrc/elementwise.c`: numpy's own exp between two C
passes instead of nine numpy passes; one pass instead of five); anything else it is given goes
to the interpreter's kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Op
from mdla_ir.interp.conv import depthwise_conv_2d, depthwise_nhwc, pad_nhwc
from mdla_ir.interp.elementwise import hard_swish as hard_swish_definition
from mdla_ir.interp.elementwise import sigmoid, unary
from mdla_ir.interp.registry import Kernel, apply_fuse
from mdla_ir.ops import OpKind
from mdla_quant.native import library

Array = np.ndarray[Any, Any]


def calibration_kernels() -> dict[OpKind, Kernel]:
    """The C kernels by op kind; {} when the library cannot be built."""
    if library() is None:
        return {}
    return {
        OpKind.DEPTHWISE_CONV_2D: depthwise,
        OpKind.LOGISTIC: logistic,
        OpKind.HARD_SWISH: hard_swish,
    }


def depthwise(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """DEPTHWISE_CONV_2D through `depthwise_f32`, or the interpreter's kernel for an NCHW
    graph or operands that are not all float32."""
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else None
    f32 = np.dtype(np.float32)
    if layout != "NHWC" or x.dtype != f32 or w.dtype != f32 or (b is not None and b.dtype != f32):
        return depthwise_conv_2d(op, args, layout)
    a = ConvAttrs.of(op)
    y = depthwise_f32(x, w, b, a.stride, a.dilation, a.padding)
    return [apply_fuse(y, op.fuse, in_place=True)]


def depthwise_f32(
    x: Array,
    w: Array,
    bias: Array | None,
    stride: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
) -> Array:
    """`mdla_ir.interp.conv.depthwise_nhwc` for float32 x (N,H,W,C), w (1,KH,KW,C*m), bias."""
    lib = library()
    if lib is None:
        return depthwise_nhwc(x, w, bias, stride, dilation, padding)
    _, kh, kw, o = w.shape
    xp = pad_nhwc(x, padding)
    if o != x.shape[3]:
        xp = np.repeat(xp, o // x.shape[3], axis=3)
    xp = np.ascontiguousarray(xp)
    (sh, sw), (dh, dw) = stride, dilation
    n, hp, wp, _ = xp.shape
    oh, ow = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    if min(n, oh, ow, o) <= 0:  # nothing to compute
        return depthwise_nhwc(x, w, bias, stride, dilation, padding)
    out = np.empty((n, oh, ow, o), dtype=np.float32)
    wt = np.ascontiguousarray(w.reshape(kh, kw, o))
    b = None if bias is None else np.ascontiguousarray(bias.reshape(o))
    lib.mdla_dw_f32(
        xp.ctypes.data, n, hp, wp, o, wt.ctypes.data, kh, kw, sh, sw, dh, dw,
        None if b is None else b.ctypes.data, out.ctypes.data, oh, ow,
    )  # fmt: skip
    return out


def sigmoid_f32(x: Array) -> Array:
    """`mdla_ir.interp.elementwise.sigmoid` of a float32 x: -|x| in C, numpy's exp in place,
    then (x >= 0 ? 1 : e) / (e + 1) in C (csrc/elementwise.c says why that is the same)."""
    lib = library()
    if lib is None:
        return sigmoid(x)
    x = np.asarray(x, order="C")  # (a 0-d x stays 0-d)
    e = np.empty(x.shape, np.float32)
    lib.mdla_neg_abs_f32(x.ctypes.data, x.size, e.ctypes.data)
    np.exp(e, out=e)
    lib.mdla_sigmoid_tail_f32(x.ctypes.data, e.ctypes.data, x.size, e.ctypes.data)
    return e


def hard_swish_f32(x: Array) -> Array:
    """The interpreter's x * clip(x + 3, 0, 6) / 6 of a float32 x, in one C pass."""
    lib = library()
    if lib is None:
        return np.asarray(hard_swish_definition(x), dtype=np.float32)
    x = np.asarray(x, order="C")  # (a 0-d x stays 0-d)
    out = np.empty(x.shape, np.float32)
    lib.mdla_hard_swish_f32(x.ctypes.data, x.size, out.ctypes.data)
    return out


def _float32_kernel(f32: Callable[[Array], Array]) -> Kernel:
    """The kernel running `f32` on a float32 operand, the interpreter's `unary` on any other."""

    def run(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
        if args[0].dtype != np.float32:
            return unary(op, args, layout)
        return [f32(args[0])]

    return run


logistic = _float32_kernel(sigmoid_f32)  # LOGISTIC through `sigmoid_f32`
hard_swish = _float32_kernel(hard_swish_f32)  # HARD_SWISH through `hard_swish_f32`
