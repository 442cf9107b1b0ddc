"""Calibration's float CONV_2D through PyTorch's (oneDNN's) convolution, when torch is installed.

    mdla_quant.quantize(graph, calib, config, kernels=torch_kernels())

mdla_quant stays torch-free: its interpreter multiplies im2col patches with OpenBLAS's SGEMM.
A compile (which imports its models with torch) hands calibration this kernel instead: oneDNN's
channels-last direct convolution runs a ResNet-18's 3x3 and 7x7 layers in 0.78x the time over
one of its forwards (0.6x on the 56x56 and 28x28 ones, the same on the 7x7x512 ones). A 1x1 conv
keeps the interpreter's GEMM, and DEPTHWISE_CONV_2D `mdla_quant`'s C kernel: oneDNN is no
faster on them within a whole forward. Its sums are the same products added in another order,
so an activation can differ from the interpreter's in the last bits and a histogram bin edge
may move. The value computed is the same on 1, 2 or more threads (oneDNN splits a forward
convolution over output pixels and channels, never over the summed input channels;
tests/compile/test_torch_conv.py holds it). Only calibration uses it: every other float run
(AdaRound, bias correction, `run_float`, the FP32 side of `run`) keeps the interpreter's.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Op
from mdla_ir.interp.conv import conv_2d, pad_nhwc
from mdla_ir.interp.registry import Kernel, apply_fuse
from mdla_ir.ops import OpKind

Array = np.ndarray[Any, Any]


def torch_kernels() -> dict[OpKind, Kernel]:
    """The torch kernels by op kind when torch can be imported, else {} (the interpreter's)."""
    if importlib.util.find_spec("torch") is None:
        return {}
    return {OpKind.CONV_2D: torch_conv_2d}


def _float32_nhwc(args: Sequence[Array], layout: str) -> bool:
    f32 = np.dtype(np.float32)
    return layout == "NHWC" and all(a.dtype == f32 for a in args)


def torch_conv_2d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """CONV_2D of float32 NHWC operands by `torch.nn.functional.conv2d`; a 1x1 stride-1
    unpadded one, or any other operands, by the interpreter's kernel."""
    a = ConvAttrs.of(op)
    w = args[1]
    pointwise = w.shape[1:3] == (1, 1) and a.groups == 1 and tuple(a.stride) == (1, 1)
    if not _float32_nhwc(args, layout) or (pointwise and not any(a.padding)):
        return conv_2d(op, args, layout)
    b = args[2] if len(args) > 2 else None
    y = conv_nhwc(args[0], w, b, a.stride, a.dilation, a.padding, a.groups)
    return [apply_fuse(y, op.fuse, in_place=True)]


def conv_nhwc(
    x: Array,
    w: Array,
    bias: Array | None,
    stride: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    groups: int,
) -> Array:
    """x (N,H,W,C), w (O,KH,KW,C/groups) -> (N,OH,OW,O) float32, as `conv2d_nhwc` defines it.

    Both operands reach torch as channels-last NCHW views of the same memory (no copy); an
    asymmetric padding (TFLite's SAME) is applied first, since torch pads both sides alike."""
    import torch  # (importing mdla_compile imports no torch)

    top, bottom, left, right = padding
    pad = (top, left)
    if (top, left) != (bottom, right):
        x, pad = pad_nhwc(x, padding), (0, 0)
    xt = torch.from_numpy(np.ascontiguousarray(x)).permute(0, 3, 1, 2)
    wt = torch.from_numpy(np.ascontiguousarray(w)).permute(0, 3, 1, 2)
    bt = None if bias is None else torch.from_numpy(np.ascontiguousarray(bias))
    with torch.inference_mode():
        y = torch.nn.functional.conv2d(xt, wt, bt, tuple(stride), pad, tuple(dilation), groups)
    return np.ascontiguousarray(y.permute(0, 2, 3, 1).numpy())
