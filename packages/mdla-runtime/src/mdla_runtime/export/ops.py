"""One IR op -> TFLite operator(s), with explicit paddings lowered to SAME/VALID or a PAD: a table
of small functions, one line per op (`_EMITTERS`), reading attributes through their records."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mdla_ir.attrs import (
    AxisAttrs,
    BlockAttrs,
    ConvAttrs,
    MeanAttrs,
    PadAttrs,
    PoolAttrs,
    ResizeAttrs,
    SoftmaxAttrs,
)
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_ir.schema import HOST_CODES
from mdla_runtime.export.host_ops import HOST
from mdla_runtime.export.limits import check_loadable
from mdla_runtime.export.writer import ExportError, UnexportableOpError, Writer, padding_mode

ZERO_POINT = "zero_point"


def _spatial(
    w: Writer,
    op: Op,
    a: ConvAttrs | PoolAttrs,
    kernel: Sequence[int],
    dilation: Sequence[int],
    pad_value: str | None,
) -> tuple[int, int]:
    """(input tensor index, TFLite Padding) for a windowed op with attributes `a`, inserting
    PAD/PADV2 in front of it if needed."""
    g, x = w.graph, op.inputs[0]
    xs, ys = g.tensors[x].shape, g.tensors[op.outputs[0]].shape
    padding = a.padding
    mode = padding_mode(xs[1:3], kernel, a.stride, dilation, padding, ys[1:3])
    if mode is not None:
        return w.tensor(x), int(getattr(w.S.Padding, mode))
    if pad_value is None:
        raise ExportError(
            f"op `{op.name}` ({op.kind.name}): padding {padding} is neither SAME "
            "nor VALID, and AVERAGE_POOL_2D cannot take a PAD in front (padding "
            "is excluded from its count)"
        )
    t, b, left, r = padding
    shape = (xs[0], xs[1] + t + b, xs[2] + left + r, xs[3])
    dtype = g.tensors[x].dtype  # int8, or int16 where the op runs 16x8
    padded = w.add_tensor(f"{op.name}/pad", shape, dtype, g.tensors[x].quant)
    pads = w.const_i32(f"{op.name}/paddings", [[0, 0], [t, b], [left, r], [0, 0]])
    if pad_value == "zero_point":
        w.emit("PAD", [w.tensor(x), pads], [padded], ("PadOptions", w.options("PadOptions")))
    else:
        low = -128 if dtype == "int8" else -32768  # the dtype's minimum never wins a max
        value = w.add_tensor(f"{op.name}/pad_value", (), dtype, g.tensors[x].quant, np.array(low))
        w.emit(
            "PADV2",
            [w.tensor(x), pads, value],
            [padded],
            ("PadV2Options", w.options("PadV2Options")),
        )
    return padded, int(w.S.Padding.VALID)


def _zero_bias(w: Writer, op: Op) -> int:
    """An all-zero bias with scale s_in * s_w[o], zero point 0 (adds nothing): int32, or int64
    where the input is int16 (16x8)."""
    x_q, w_q = (w.graph.tensors[n].quant for n in op.inputs[:2])
    channels = w.graph.tensors[op.inputs[1]].shape[0]
    if x_q is None or w_q is None:
        raise ExportError(f"op `{op.name}` (CONV_2D): input and filter need quantization")
    scales = np.float32(x_q.scale[0]) * np.broadcast_to(
        np.asarray(w_q.scale, np.float32), (channels,)
    )
    q = QuantParams(tuple(float(v) for v in scales), (0,) * channels, 0)
    dtype = "int64" if w.graph.tensors[op.inputs[0]].dtype == "int16" else "int32"
    return w.add_tensor(f"{op.name}/zero_bias", (channels,), dtype, q, np.zeros(channels, dtype))


Emit = Callable[[Writer, Op, list[int]], None]  # (writer, op, [output tensor index])


def _conv(w: Writer, op: Op, out: list[int]) -> None:
    a, ins = ConvAttrs.of(op), list(op.inputs)
    wshape = w.graph.tensors[ins[1]].shape
    x, pad = _spatial(w, op, a, wshape[1:3], a.dilation, ZERO_POINT)
    common = {
        "padding": pad,
        "strideH": a.stride[0],
        "strideW": a.stride[1],
        "dilationHFactor": a.dilation[0],
        "dilationWFactor": a.dilation[1],
        "fusedActivationFunction": w.fuse(op),
    }
    rest = [w.tensor(n) for n in ins[1:]]
    if op.kind is OpKind.CONV_2D:
        if len(rest) == 1:  # LiteRT's int8 CONV_2D requires a bias
            rest.append(_zero_bias(w, op))
        w.emit("CONV_2D", [x, *rest], out, ("Conv2DOptions", w.options("Conv2DOptions", **common)))
        return
    mult = wshape[3] // w.graph.tensors[ins[0]].shape[3]
    opts = w.options("DepthwiseConv2DOptions", depthMultiplier=mult, **common)
    w.emit("DEPTHWISE_CONV_2D", [x, *rest], out, ("DepthwiseConv2DOptions", opts))


def _pool(w: Writer, op: Op, out: list[int]) -> None:
    a = PoolAttrs.of(op)
    kh, kw = a.kernel
    pad_value = "minimum" if op.kind is OpKind.MAX_POOL_2D else None  # never wins a max
    x, pad = _spatial(w, op, a, (kh, kw), (1, 1), pad_value)
    opts = w.options(
        "Pool2DOptions",
        padding=pad,
        strideH=a.stride[0],
        strideW=a.stride[1],
        filterHeight=kh,
        filterWidth=kw,
        fusedActivationFunction=w.fuse(op),
    )
    w.emit(op.kind.name, [x], out, ("Pool2DOptions", opts))


def _fc(w: Writer, op: Op, out: list[int]) -> None:
    # keepNumDims: the output keeps the input's leading dims ([..., units]); without it LiteRT
    # writes [batch, units], which differs for rank > 2 and for a rank-1 input ([units]).
    keep = len(w.graph.tensors[op.inputs[0]].shape) != 2
    opts = w.options("FullyConnectedOptions", keepNumDims=keep, fusedActivationFunction=w.fuse(op))
    w.emit(
        "FULLY_CONNECTED", [w.tensor(n) for n in op.inputs], out, ("FullyConnectedOptions", opts)
    )


def _binary(options: str) -> Emit:
    def emit(w: Writer, op: Op, out: list[int]) -> None:
        opts = w.options(options, fusedActivationFunction=w.fuse(op))
        if options != "MulOptions" and w.graph.tensors[op.outputs[0]].dtype == "int16":
            opts.potScaleInt16 = False  # 16x8 ADD/SUB at any scales: the left_shift 15 path
        w.emit(op.kind.name, [w.tensor(n) for n in op.inputs], out, (options, opts))

    return emit


def _plain(w: Writer, op: Op, out: list[int]) -> None:
    w.emit(op.kind.name, [w.tensor(op.inputs[0])], out)


def _softmax(w: Writer, op: Op, out: list[int]) -> None:
    """SOFTMAX over the last axis; over another axis TRANSPOSE(perm), SOFTMAX, TRANSPOSE(perm^-1).

    Exact: TFLite's SOFTMAX normalizes each last-axis row on its own, perm moves `axis` last
    keeping the other axes in order (so the rows of transpose(x, perm) are the rows of x along
    `axis`), and a TRANSPOSE moves codes (int8, or int16 for 16x8) unchanged under one scale
    and zero point; the inverse permutation puts every output code back where the op writes it."""
    a, x = SoftmaxAttrs.of(op), w.graph.tensors[op.inputs[0]]
    rank = len(x.shape)
    opts = w.options("SoftmaxOptions", beta=a.beta)
    if rank == 0 or a.axis % rank == rank - 1:
        w.emit("SOFTMAX", [w.tensor(op.inputs[0])], out, ("SoftmaxOptions", opts))
        return
    axis = a.axis % rank
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = [perm.index(d) for d in range(rank)]
    moved = [x.shape[d] for d in perm]
    y = w.graph.tensors[op.outputs[0]]
    to_last = w.add_tensor(f"{op.name}/axis_last", moved, x.dtype, x.quant)
    normed = w.add_tensor(f"{op.name}/softmax_last", moved, y.dtype, y.quant)
    t_opts = ("TransposeOptions", w.options("TransposeOptions"))
    w.emit("TRANSPOSE", [w.tensor(x.name), w.const_i32(f"{op.name}/perm", perm)], [to_last], t_opts)
    w.emit("SOFTMAX", [to_last], [normed], ("SoftmaxOptions", opts))
    w.emit("TRANSPOSE", [normed, w.const_i32(f"{op.name}/perm_back", inverse)], out, t_opts)


def _concat(w: Writer, op: Op, out: list[int]) -> None:
    opts = w.options("ConcatenationOptions", axis=AxisAttrs.of(op).axis)
    w.emit("CONCATENATION", [w.tensor(n) for n in op.inputs], out, ("ConcatenationOptions", opts))


def _pad(w: Writer, op: Op, out: list[int]) -> None:
    pads = w.const_i32(f"{op.name}/paddings", [list(p) for p in PadAttrs.of(op).pads])
    w.emit("PAD", [w.tensor(op.inputs[0]), pads], out, ("PadOptions", w.options("PadOptions")))


def _reshape(w: Writer, op: Op, out: list[int]) -> None:
    shape = [int(d) for d in w.graph.tensors[op.outputs[0]].shape]
    ins = [w.tensor(op.inputs[0]), w.const_i32(f"{op.name}/shape", shape)]
    w.emit("RESHAPE", ins, out, ("ReshapeOptions", w.options("ReshapeOptions", newShape=shape)))


def _mean(w: Writer, op: Op, out: list[int]) -> None:
    a = MeanAttrs.of(op)
    axes = w.const_i32(f"{op.name}/axes", list(a.axes))
    opts = w.options("ReducerOptions", keepDims=a.keepdims)
    w.emit("MEAN", [w.tensor(op.inputs[0]), axes], out, ("ReducerOptions", opts))


def _resize(w: Writer, op: Op, out: list[int]) -> None:
    a = ResizeAttrs.of(op)
    size = w.const_i32(f"{op.name}/size", list(a.size))
    kind = "ResizeBilinearOptions"
    if op.kind is OpKind.RESIZE_NEAREST_NEIGHBOR:
        kind = "ResizeNearestNeighborOptions"
    opts = w.options(kind, alignCorners=a.align_corners, halfPixelCenters=a.half_pixel_centers)
    w.emit(op.kind.name, [w.tensor(op.inputs[0]), size], out, (kind, opts))


def _prelu(w: Writer, op: Op, out: list[int]) -> None:
    """PRELU with the constant alpha (a LeakyReLU too: its one-element alpha is quantized like
    any alpha, so PRELU, not LEAKY_RELU with a float slope, is the bit-exact export)."""
    w.emit("PRELU", [w.tensor(n) for n in op.inputs], out)


def _transpose_conv(w: Writer, op: Op, out: list[int]) -> None:
    """TRANSPOSE_CONV VALID onto the full (in-1)*s + k output, then a SLICE taking the crop:
    TFLite has no explicit pads for it (its SAME puts an odd crop after, torch's padding
    crops before), and slicing int8 codes after the requantization changes none of them."""
    a, g = ConvAttrs.of(op), w.graph
    (n, h, wd, _), (o, kh, kw, _) = (g.tensors[op.inputs[i]].shape for i in (0, 1))
    full = (n, (h - 1) * a.stride[0] + kh, (wd - 1) * a.stride[1] + kw, o)
    t, _, left, _ = a.padding
    y_shape, y_q = g.tensors[op.outputs[0]].shape, g.tensors[op.outputs[0]].quant
    cropped = tuple(full) != tuple(y_shape)
    dst = [w.add_tensor(f"{op.name}/full", full, "int8", y_q)] if cropped else out
    bias = w.tensor(op.inputs[2]) if len(op.inputs) > 2 else _zero_bias(w, op)
    ins = [w.const_i32(f"{op.name}/output_shape", list(full)), w.tensor(op.inputs[1])]
    opts = w.options(
        "TransposeConvOptions",
        padding=int(w.S.Padding.VALID),
        strideH=a.stride[0],
        strideW=a.stride[1],
        fusedActivationFunction=w.fuse(op),
    )
    ins += [w.tensor(op.inputs[0]), bias]
    w.emit("TRANSPOSE_CONV", ins, dst, ("TransposeConvOptions", opts))
    if cropped:
        begin = w.const_i32(f"{op.name}/begin", [0, t, left, 0])
        size = w.const_i32(f"{op.name}/size", [int(d) for d in y_shape])
        w.emit("SLICE", [dst[0], begin, size], out, ("SliceOptions", w.options("SliceOptions")))


def _depth_to_space(w: Writer, op: Op, out: list[int]) -> None:
    opts = w.options("DepthToSpaceOptions", blockSize=BlockAttrs.of(op).block_size)
    w.emit("DEPTH_TO_SPACE", [w.tensor(op.inputs[0])], out, ("DepthToSpaceOptions", opts))


# One line per op: the IR kind -> the function writing its TFLite operator(s).
_EMITTERS: dict[OpKind, Emit] = {
    OpKind.CONV_2D: _conv,  # CONV_2D [PAD in front when neither SAME nor VALID]
    OpKind.DEPTHWISE_CONV_2D: _conv,  # DEPTHWISE_CONV_2D [PAD in front]
    OpKind.AVERAGE_POOL_2D: _pool,  # AVERAGE_POOL_2D (SAME or VALID only)
    OpKind.MAX_POOL_2D: _pool,  # MAX_POOL_2D [PADV2 of -128 in front]
    OpKind.FULLY_CONNECTED: _fc,
    OpKind.ADD: _binary("AddOptions"),
    OpKind.SUB: _binary("SubOptions"),
    OpKind.MUL: _binary("MulOptions"),
    OpKind.RELU: _plain,
    OpKind.RELU6: _plain,
    OpKind.LOGISTIC: _plain,
    OpKind.TANH: _plain,
    OpKind.HARD_SWISH: _plain,
    OpKind.SOFTMAX: _softmax,  # SOFTMAX [TRANSPOSE around it for another axis]
    OpKind.CONCATENATION: _concat,
    OpKind.PAD: _pad,
    OpKind.RESHAPE: _reshape,
    OpKind.MEAN: _mean,
    OpKind.RESIZE_BILINEAR: _resize,
    OpKind.RESIZE_NEAREST_NEIGHBOR: _resize,
    OpKind.DEPTH_TO_SPACE: _depth_to_space,
    OpKind.TRANSPOSE_CONV_2D: _transpose_conv,  # TRANSPOSE_CONV VALID [SLICE of the crop]
    OpKind.PRELU: _prelu,  # PRELU (LeakyReLU: a one-element alpha)
    OpKind.QUANTIZE: _plain,  # QUANTIZE: int8 <-> int16 where a 16x8 op meets an int8 one
    **HOST,  # a CPU partition's TRANSPOSE, GELU, LAYER_NORM, ARGMAX (export/host_ops.py)
}


def emitter(kind: OpKind) -> Emit | None:
    """The function writing a `kind` op's TFLite operator(s) (None: it has no .tflite form)."""
    return _EMITTERS.get(kind)


def emit_op(w: Writer, op: Op) -> None:
    """Append the TFLite operator(s) computing `op` (after `limits.check_loadable`)."""
    emit = emitter(op.kind)
    if emit is None:
        host = " (a CPU partition's host op: the .mdla runs it, a .tflite cannot hold it yet)"
        raise UnexportableOpError(
            f"op `{op.name}`: {op.kind.name} has no .tflite export"
            + (host if op.kind in HOST_CODES else "")
        )
    check_loadable(w.graph, op)
    out = [w.tensor(op.outputs[0])]
    emit(w, op, out)
