"""One IR op -> TFLite operator(s), with explicit paddings lowered to SAME/VALID or a PAD."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_runtime.tflite.writer import ExportError, Writer, padding_mode

ZERO_POINT = "zero_point"
_PLAIN = {
    OpKind.RELU: "RELU",
    OpKind.RELU6: "RELU6",
    OpKind.LOGISTIC: "LOGISTIC",
    OpKind.TANH: "TANH",
    OpKind.HARD_SWISH: "HARD_SWISH",
}
_BINARY = {
    OpKind.ADD: ("ADD", "AddOptions"),
    OpKind.SUB: ("SUB", "SubOptions"),
    OpKind.MUL: ("MUL", "MulOptions"),
}


def _spatial(
    w: Writer,
    op: Op,
    x: str,
    kernel: Sequence[int],
    dilation: Sequence[int],
    pad_value: int | str | None,
) -> tuple[int, int]:
    """(input tensor index, TFLite Padding) for a windowed op, inserting PAD/PADV2 if needed."""
    g = w.graph
    xs, ys = g.tensors[x].shape, g.tensors[op.outputs[0]].shape
    padding = tuple(int(p) for p in op.attrs["padding"])
    mode = padding_mode(xs[1:3], kernel, op.attrs["stride"], dilation, padding, ys[1:3])
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
    padded = w.add_tensor(f"{op.name}/pad", shape, "int8", g.tensors[x].quant)
    pads = w.const_i32(f"{op.name}/paddings", [[0, 0], [t, b], [left, r], [0, 0]])
    if pad_value == "zero_point":
        w.emit("PAD", [w.tensor(x), pads], [padded], ("PadOptions", w.options("PadOptions")))
    else:
        value = w.add_tensor(
            f"{op.name}/pad_value", (), "int8", g.tensors[x].quant, np.array(pad_value, np.int8)
        )
        w.emit(
            "PADV2",
            [w.tensor(x), pads, value],
            [padded],
            ("PadV2Options", w.options("PadV2Options")),
        )
    return padded, int(w.S.Padding.VALID)


def _zero_bias(w: Writer, op: Op) -> int:
    """An all-zero int32 bias with scale s_in * s_w[o], zero point 0 (adds nothing)."""
    x_q, w_q = (w.graph.tensors[n].quant for n in op.inputs[:2])
    channels = w.graph.tensors[op.inputs[1]].shape[0]
    if x_q is None or w_q is None:
        raise ExportError(f"op `{op.name}` (CONV_2D): input and filter need quantization")
    scales = np.float32(x_q.scale[0]) * np.broadcast_to(
        np.asarray(w_q.scale, np.float32), (channels,)
    )
    q = QuantParams(tuple(float(v) for v in scales), (0,) * channels, 0)
    return w.add_tensor(
        f"{op.name}/zero_bias", (channels,), "int32", q, np.zeros(channels, np.int32)
    )


def emit_op(w: Writer, op: Op) -> None:
    """Append the TFLite operator(s) computing `op`."""
    a, k = op.attrs, op.kind
    ins, out = list(op.inputs), [w.tensor(op.outputs[0])]
    if k in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D):
        wshape = w.graph.tensors[ins[1]].shape
        dil = tuple(a.get("dilation", (1, 1)))
        x, pad = _spatial(w, op, ins[0], wshape[1:3], dil, ZERO_POINT)
        common = {
            "padding": pad,
            "strideH": a["stride"][0],
            "strideW": a["stride"][1],
            "dilationHFactor": dil[0],
            "dilationWFactor": dil[1],
            "fusedActivationFunction": w.fuse(op),
        }
        rest = [w.tensor(n) for n in ins[1:]]
        if k is OpKind.CONV_2D and len(rest) == 1:  # LiteRT's int8 CONV_2D requires a bias
            rest.append(_zero_bias(w, op))
        if k is OpKind.CONV_2D:
            w.emit(
                "CONV_2D", [x, *rest], out, ("Conv2DOptions", w.options("Conv2DOptions", **common))
            )
        else:
            mult = wshape[3] // w.graph.tensors[ins[0]].shape[3]
            w.emit(
                "DEPTHWISE_CONV_2D",
                [x, *rest],
                out,
                (
                    "DepthwiseConv2DOptions",
                    w.options("DepthwiseConv2DOptions", depthMultiplier=mult, **common),
                ),
            )
    elif k in (OpKind.AVERAGE_POOL_2D, OpKind.MAX_POOL_2D):
        kh, kw = a["kernel"]
        x, pad = _spatial(
            w, op, ins[0], (kh, kw), (1, 1), -128 if k is OpKind.MAX_POOL_2D else None
        )
        code = "AVERAGE_POOL_2D" if k is OpKind.AVERAGE_POOL_2D else "MAX_POOL_2D"
        w.emit(
            code,
            [x],
            out,
            (
                "Pool2DOptions",
                w.options(
                    "Pool2DOptions",
                    padding=pad,
                    strideH=a["stride"][0],
                    strideW=a["stride"][1],
                    filterHeight=kh,
                    filterWidth=kw,
                    fusedActivationFunction=w.fuse(op),
                ),
            ),
        )
    elif k is OpKind.FULLY_CONNECTED:
        keep = len(w.graph.tensors[ins[0]].shape) > 2
        w.emit(
            "FULLY_CONNECTED",
            [w.tensor(n) for n in ins],
            out,
            (
                "FullyConnectedOptions",
                w.options(
                    "FullyConnectedOptions", keepNumDims=keep, fusedActivationFunction=w.fuse(op)
                ),
            ),
        )
    elif k in _BINARY:
        code, opts = _BINARY[k]
        w.emit(
            code,
            [w.tensor(n) for n in ins],
            out,
            (opts, w.options(opts, fusedActivationFunction=w.fuse(op))),
        )
    elif k in _PLAIN:
        w.emit(_PLAIN[k], [w.tensor(ins[0])], out)
    elif k is OpKind.SOFTMAX:
        rank = len(w.graph.tensors[ins[0]].shape)
        if int(a.get("axis", -1)) % rank != rank - 1:
            raise ExportError(
                f"op `{op.name}` (SOFTMAX): TFLite reduces the last axis only, "
                f"got axis {a.get('axis')}"
            )
        w.emit(
            "SOFTMAX",
            [w.tensor(ins[0])],
            out,
            ("SoftmaxOptions", w.options("SoftmaxOptions", beta=float(a.get("beta", 1.0)))),
        )
    elif k is OpKind.CONCATENATION:
        w.emit(
            "CONCATENATION",
            [w.tensor(n) for n in ins],
            out,
            ("ConcatenationOptions", w.options("ConcatenationOptions", axis=int(a["axis"]))),
        )
    elif k is OpKind.PAD:
        pads = w.const_i32(f"{op.name}/paddings", [list(p) for p in a["pads"]])
        w.emit("PAD", [w.tensor(ins[0]), pads], out, ("PadOptions", w.options("PadOptions")))
    elif k is OpKind.RESHAPE:
        shape = [int(d) for d in w.graph.tensors[op.outputs[0]].shape]
        w.emit(
            "RESHAPE",
            [w.tensor(ins[0]), w.const_i32(f"{op.name}/shape", shape)],
            out,
            ("ReshapeOptions", w.options("ReshapeOptions", newShape=shape)),
        )
    elif k is OpKind.MEAN:
        axes = w.const_i32(f"{op.name}/axes", [int(v) for v in a["axes"]])
        w.emit(
            "MEAN",
            [w.tensor(ins[0]), axes],
            out,
            (
                "ReducerOptions",
                w.options("ReducerOptions", keepDims=bool(a.get("keepdims", False))),
            ),
        )
    elif k is OpKind.RESIZE_BILINEAR:
        size = w.const_i32(f"{op.name}/size", [int(v) for v in a["size"]])
        w.emit(
            "RESIZE_BILINEAR",
            [w.tensor(ins[0]), size],
            out,
            (
                "ResizeBilinearOptions",
                w.options(
                    "ResizeBilinearOptions",
                    alignCorners=bool(a.get("align_corners")),
                    halfPixelCenters=bool(a.get("half_pixel_centers")),
                ),
            ),
        )
    else:
        raise ExportError(f"op `{op.name}`: {k.name} has no .tflite export")
