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

`torch.nn.functional.conv2d` reorders the filter into oneDNN's blocked layout on every call:
calibration runs each conv once per sample with the same filter, so `TorchConv` reorders each
filter once (`torch.ops.mkldnn._reorder_convolution_weight`, what torch's own inference
compiler does) and runs the same oneDNN primitive on it (`_convolution_pointwise`), where
conv2d would run oneDNN: the values are conv2d's bit for bit (tests/compile/test_torch_conv.py).
A resnet18's 17 convs: 67 -> 56 ms per image (its 7x7x512 layers 6.3 -> 3.9 ms).

With `WINOGRAD` (the default) a stride-1 3x3 conv of 14x14 outputs or more runs instead by
`mdla_quant.winograd`'s F(4x4, 3x3), 4 multiplies per output and input channel where the direct
form has 9: its outputs round otherwise, about 1e-6 of their tensor's range apart, which moves
a calibration range by as little (tests/quant/test_winograd.py bounds both). ResNet-18's 13 such
layers: 56.6 -> 48.5 ms of convs per image; its int8 graph at N = 32 differs in 3 of 80 scales,
by at most 4.4e-5 of one, logits SQNR 32.27 -> 32.32 dB on 16 held-out crops. The smaller and the
7x7 layers stay on oneDNN, which was as fast or faster there.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Op
from mdla_ir.interp.conv import conv_2d, pad_nhwc
from mdla_ir.interp.registry import Kernel, apply_fuse
from mdla_ir.ops import OpKind
from mdla_quant.winograd import Scratch, conv3x3, filter_transform

Array = np.ndarray[Any, Any]
T = TypeVar("T")


# Calibration's large stride-1 3x3 convs by Winograd F(4x4, 3x3) (`mdla_quant.winograd`):
# fewer multiplies, other roundings (about 1e-6 of a tensor's range); False: oneDNN's for all.
WINOGRAD = True
WINOGRAD_MIN_PIXELS = 14 * 14  # output pixels per sample from which it beat oneDNN here


def torch_kernels(winograd: bool | None = None) -> dict[OpKind, Kernel]:
    """The torch kernels by op kind when torch can be imported, else {} (the interpreter's).
    Each call gives a fresh `TorchConv`, whose reordered filters live as long as the dict;
    `winograd` (default `WINOGRAD`) lets it run the large 3x3 ones by Winograd."""
    if importlib.util.find_spec("torch") is None:
        return {}
    return {OpKind.CONV_2D: TorchConv(WINOGRAD if winograd is None else winograd)}


def _float32_nhwc(args: Sequence[Array], layout: str) -> bool:
    f32 = np.dtype(np.float32)
    return layout == "NHWC" and all(a.dtype == f32 for a in args)


def _by_torch(op: Op, args: Sequence[Array], layout: str) -> bool:
    """Whether torch runs this CONV_2D: float32 NHWC operands, not a 1x1 stride-1 unpadded one."""
    a = ConvAttrs.of(op)
    w = args[1]
    pointwise = w.shape[1:3] == (1, 1) and a.groups == 1 and tuple(a.stride) == (1, 1)
    return _float32_nhwc(args, layout) and not (pointwise and not any(a.padding))


def torch_conv_2d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """CONV_2D of float32 NHWC operands by `torch.nn.functional.conv2d`; a 1x1 stride-1
    unpadded one, or any other operands, by the interpreter's kernel."""
    if not _by_torch(op, args, layout):
        return conv_2d(op, args, layout)
    a = ConvAttrs.of(op)
    b = args[2] if len(args) > 2 else None
    y = conv_nhwc(args[0], args[1], b, a.stride, a.dilation, a.padding, a.groups)
    return [apply_fuse(y, op.fuse, in_place=True)]


# What a torch whose internal oneDNN ops differ from this one's raises when they are called.
INTERNAL_ERRORS = (TypeError, RuntimeError, AttributeError, ValueError)


class TorchConv:
    """`torch_conv_2d` with each filter reordered for oneDNN once, on its first call, and kept
    (with the array, so that an id names one filter) for every later call with the same filter
    and input shape. A filter must not be changed in place while its kernel is in use. The
    oneDNN ops are torch internals: should one fail (another torch's signature), every later
    call runs conv2d, which gives the same values."""

    def __init__(self, winograd: bool = False) -> None:
        self._packed: dict[tuple[int, tuple[int, ...]], tuple[Array, Any]] = {}
        self._internals_work = True
        self.winograd = winograd
        self._transformed: dict[int, tuple[Array, Array]] = {}
        self._scratch = Scratch()

    def __call__(self, op: Op, args: Sequence[Array], layout: str) -> list[Array]:
        if not _by_torch(op, args, layout):
            return conv_2d(op, args, layout)
        a = ConvAttrs.of(op)
        x, w = args[0], args[1]
        if self.winograd and by_winograd(a, x.shape, w.shape):
            u = self._winograd_filter(w)
            relu = op.fuse == "RELU"  # in the output transform: no pass of its own
            y = conv3x3(x, u, _bias(args), a.padding, self._scratch, relu)
            if y is not None:
                return [y if relu else apply_fuse(y, op.fuse, in_place=True)]
        if tuple(a.padding[::2]) != tuple(a.padding[1::2]):  # asymmetric: torch pads alike
            x = pad_nhwc(x, a.padding)
            padding: Sequence[int] = (0, 0, 0, 0)
        else:
            padding = a.padding
        packed = self._filter(w, x.shape, padding, a.stride, a.dilation, a.groups)
        b = _bias(args)
        y = None
        if packed is not None:
            try:
                y = packed_conv_nhwc(x, packed, b, a.stride, a.dilation, padding, a.groups)
            except INTERNAL_ERRORS:
                self._internals_work = False
        if y is None:
            y = conv_nhwc(x, w, b, a.stride, a.dilation, padding, a.groups)
        return [apply_fuse(y, op.fuse, in_place=True)]

    def _winograd_filter(self, w: Array) -> Array:
        """`filter_transform(w)` (`mdla_quant.winograd`), made on the first call with `w`."""
        return _kept(self._transformed, id(w), w, lambda: filter_transform(w))

    def _filter(
        self,
        w: Array,
        x_shape: Sequence[int],
        padding: Sequence[int],
        stride: Sequence[int],
        dilation: Sequence[int],
        groups: int,
    ) -> Any:
        """`reorder_filter`'s `w` for inputs of `x_shape` (NHWC), made on the first call."""
        if not self._internals_work:
            return None
        try:
            return _kept(
                self._packed,
                (id(w), tuple(x_shape)),
                w,
                lambda: reorder_filter(w, x_shape, padding, stride, dilation, groups),
            )
        except INTERNAL_ERRORS:
            self._internals_work = False
            return None


def _kept(store: dict[Any, tuple[Array, T]], key: Any, w: Array, make: Callable[[], T]) -> T:
    """`store`'s value for `key` (which holds id(w)) when made from this very `w`, else `make()`,
    kept with `w` (holding it keeps its id from naming another array)."""
    kept = store.get(key)
    if kept is not None and kept[0] is w:
        return kept[1]
    made = make()
    store[key] = (w, made)
    return made


def by_winograd(a: ConvAttrs, x_shape: Sequence[int], w_shape: Sequence[int]) -> bool:
    """A 3x3, stride-1, undilated, ungrouped conv with `WINOGRAD_MIN_PIXELS` outputs or more."""
    _, h, w, _ = x_shape
    top, bottom, left, right = a.padding
    pixels = (h + top + bottom - 2) * (w + left + right - 2)
    plain = tuple(a.stride) == (1, 1) and tuple(a.dilation) == (1, 1) and a.groups == 1
    return tuple(w_shape[1:3]) == (3, 3) and plain and pixels >= WINOGRAD_MIN_PIXELS


def _bias(args: Sequence[Array]) -> Array | None:
    return args[2] if len(args) > 2 else None


def reorder_filter(
    w: Array,
    x_shape: Sequence[int],
    padding: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Any:
    """`w` (O,KH,KW,C/groups) in the layout oneDNN's convolution of x_shape (NHWC) reads;
    None where conv2d would not run oneDNN on these shapes (small ones go to torch's own
    im2col kernel, whose sums round otherwise), or this torch has no oneDNN: conv2d is then
    used as it is."""
    import torch

    select = getattr(torch._C, "_select_conv_backend", None)
    backends = getattr(torch._C, "_ConvBackend", None)
    if select is None or backends is None or not getattr(torch._C, "_has_mkldnn", False):
        return None
    n, h, wd, c = x_shape
    xt = torch.empty((n, c, h, wd)).to(memory_format=torch.channels_last)
    wt = torch.from_numpy(np.ascontiguousarray(w)).permute(0, 3, 1, 2)
    pad = [padding[0], padding[2]]
    backend = select(xt, wt, None, list(stride), pad, list(dilation), False, [0, 0], groups, None)
    if backend != backends.Mkldnn:
        return None
    with torch.inference_mode():
        return torch.ops.mkldnn._reorder_convolution_weight(
            wt, pad, list(stride), list(dilation), groups, [n, c, h, wd]
        )


def packed_conv_nhwc(
    x: Array,
    packed: Any,
    bias: Array | None,
    stride: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    groups: int,
) -> Array:
    """`conv_nhwc` with a filter from `reorder_filter` and a symmetric `padding` (t, b, l, r)."""
    import torch

    xt = torch.from_numpy(np.ascontiguousarray(x)).permute(0, 3, 1, 2)
    bt = None if bias is None else torch.from_numpy(np.ascontiguousarray(bias))
    pad = [padding[0], padding[2]]
    with torch.inference_mode():  # ("none", [], ""): no fused post-op
        y = torch.ops.mkldnn._convolution_pointwise(
            xt, packed, bt, pad, list(stride), list(dilation), groups, "none", [], ""
        )
    return np.ascontiguousarray(y.permute(0, 2, 3, 1).numpy())


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
