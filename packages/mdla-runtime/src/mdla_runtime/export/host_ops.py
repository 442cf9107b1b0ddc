"""The CPU partition's ops (issue 17) as TFLite builtins, so a partitioned model exports as one
graph (LiteRT places every op itself): a table of small functions, one line per op (`HOST`).

    TRANSPOSE   int8  -> TRANSPOSE                                     moves codes: exact
    STRIDED_SLICE int8 -> STRIDED_SLICE                               moves codes: exact
    GELU, ELU, EXP, ... (the table group)
                int8  -> CAST(int32), ADD 128, GATHER(our 256-entry int8 table)       exact
    LAYER_NORM  int8  -> DEQUANTIZE, MEAN, SUB, MUL, MEAN, ADD eps, RSQRT, MUL [, MUL w]
                         [, ADD b], QUANTIZE                       exact in float32: see below
    ARGMAX      int8  -> ARG_MAX (int32), CAST(int8) [, RESHAPE for keepdims]       exact
    BATCH_MATMUL  int8 -> BATCH_MATMUL (adj_x, adj_y)                               exact

The table group (GELU and every other) is exact by construction: the graph's own 256-entry
table (`mdla_quant.kernels.functions.table_of`, the table the .mdla carries) is written as a
constant and indexed by the code + 128. LiteRT's own int8 GELU builtin builds its table with
its own float formula: over 1000 random (s_in, z_in, s_out, z_out), 1 of 256,000 entries
differed by one code (ai-edge-litert 2.3.0), so it is not the export.

LAYER_NORM is exact too, on every float32 element, because each builtin is the reference's
step in the reference's order (`float_ops.layer_norm_f32`): DEQUANTIZE computes s * (q - z) in
double and rounds to float32, which is the correctly rounded product of a float32 scale and an
integer |q - z| <= 255, i.e. the reference's float32 multiply; LiteRT's reference MEAN sums a
row left to right in float32 and divides by (float)n, as the reference does; SUB, MUL, ADD
and RSQRT (1.f / sqrt) are single correctly rounded float32 operations; QUANTIZE is
round-half-away(y / s) + z, clamped, as `mdla_ir.affine.quantize_input`. Measured in
tests/runtime/test_tflite_host_ops.py (and numpy's pairwise mean, which is another order,
differs there: the order is what makes it exact).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mdla_ir.attrs import ArgmaxAttrs, MatmulAttrs, NormAttrs, StridedSliceAttrs, TransposeAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_ir.schema import group
from mdla_ir.shapes import strided_slice_ends
from mdla_runtime.export.writer import ExportError, Writer

Emit = Callable[[Writer, Op, list[int]], None]  # (writer, op, [output tensor index])
INDEX_Q = (1.0, 0)  # an ARGMAX output: int8 class indices, scale 1, zero point 0


def _params(w: Writer, name: str) -> QuantParams:
    q = w.graph.tensors[name].quant
    if q is None or len(q.scale) != 1:
        raise ExportError(f"tensor `{name}`: needs per-tensor int8 quantization")
    return q


def _transpose(w: Writer, op: Op, out: list[int]) -> None:
    """TRANSPOSE of int8 codes under one scale and zero point (the quantizer ties them)."""
    if _params(w, op.inputs[0]) != _params(w, op.outputs[0]):
        raise ExportError(f"op `{op.name}` (TRANSPOSE): input and output quantization differ")
    perm = w.const_i32(f"{op.name}/perm", list(TransposeAttrs.of(op).perm))
    opts = ("TransposeOptions", w.options("TransposeOptions"))
    w.emit("TRANSPOSE", [w.tensor(op.inputs[0]), perm], out, opts)


def _strided_slice(w: Writer, op: Op, out: list[int]) -> None:
    """STRIDED_SLICE of int8 codes under one scale and zero point (the quantizer ties them)."""
    if _params(w, op.inputs[0]) != _params(w, op.outputs[0]):
        raise ExportError(f"op `{op.name}` (STRIDED_SLICE): input and output quantization differ")
    a = StridedSliceAttrs.of(op)
    end, mask = strided_slice_ends(a, w.graph.tensors[op.inputs[0]].shape)
    operands = [w.tensor(op.inputs[0])] + [
        w.const_i32(f"{op.name}/{tag}", list(v))
        for tag, v in (("begin", a.begin), ("end", end), ("strides", a.strides))
    ]
    opts = w.options("StridedSliceOptions", beginMask=0, endMask=mask, shrinkAxisMask=0)
    w.emit("STRIDED_SLICE", operands, out, ("StridedSliceOptions", opts))


def _table(w: Writer, op: Op, out: list[int]) -> None:
    """y = table[q + 128]: CAST the codes to int32 (values, not dequantized), ADD 128, GATHER
    the int8 table (tensor quantized as the output, so its codes are the output's)."""
    if len(op.inputs) != 2:
        raise ExportError(
            f"op `{op.name}` ({op.kind.name}): no table input; quantize with mdla_quant "
            "(it attaches one)"
        )
    x, table = (w.graph.tensors[n] for n in op.inputs)
    if table.data is None or table.shape != (256,) or table.dtype != "int8":
        raise ExportError(
            f"op `{op.name}` ({op.kind.name}): its table `{table.name}` is not 256 int8 codes"
        )
    y_q = _params(w, op.outputs[0])
    codes = w.add_tensor(f"{op.name}/codes", x.shape, "int32", None)
    index = w.add_tensor(f"{op.name}/index", x.shape, "int32", None)
    lut = w.add_tensor(f"{op.name}/table", (256,), "int8", y_q, np.asarray(table.data))
    cast = w.options(
        "CastOptions", inDataType=w.S.TensorType.INT8, outDataType=w.S.TensorType.INT32
    )
    w.emit("CAST", [w.tensor(x.name)], [codes], ("CastOptions", cast))
    add = ("AddOptions", w.options("AddOptions", fusedActivationFunction=0))
    w.emit("ADD", [codes, w.const_i32(f"{op.name}/offset", 128)], [index], add)
    gather = ("GatherOptions", w.options("GatherOptions", axis=0, batchDims=0))
    w.emit("GATHER", [lut, index], out, gather)


def _layer_norm(w: Writer, op: Op, out: list[int]) -> None:
    """DEQUANTIZE, the float32 steps of `float_ops.layer_norm_f32` one builtin each, QUANTIZE."""
    x = w.graph.tensors[op.inputs[0]]
    norm = NormAttrs.of(op)
    shape = tuple(norm.normalized_shape or ())
    rank = len(x.shape)
    if not shape or tuple(x.shape[rank - len(shape) :]) != shape:
        raise ExportError(
            f"op `{op.name}` (LAYER_NORM): normalized shape {shape} is not the trailing shape "
            f"of {x.shape}"
        )
    axes = w.const_i32(f"{op.name}/axes", list(range(rank - len(shape), rank)))
    row = (*x.shape[: rank - len(shape)], *(1,) * len(shape))

    def f32(tag: str, dims: tuple[int, ...] = x.shape, data: object = None) -> int:
        arr = None if data is None else np.asarray(data, np.float32).reshape(dims)
        return w.add_tensor(f"{op.name}/{tag}", dims, "float32", None, arr)

    def step(code: str, ins: list[int], dst: int, opts: str | None = None) -> int:
        options = None
        if opts == "ReducerOptions":
            options = (opts, w.options(opts, keepDims=True))
        elif opts is not None:
            options = (opts, w.options(opts, fusedActivationFunction=0))
        w.emit(code, ins, [dst], options)
        return dst

    xf = step("DEQUANTIZE", [w.tensor(x.name)], f32("x"))
    mean = step("MEAN", [xf, axes], f32("mean", row), "ReducerOptions")
    d = step("SUB", [xf, mean], f32("centered"), "SubOptions")
    var = step("MEAN", [step("MUL", [d, d], f32("squares"), "MulOptions"), axes], f32("var", row),
               "ReducerOptions")  # fmt: skip
    eps = f32("eps", (), np.float32(norm.eps))
    inv = step("RSQRT", [step("ADD", [var, eps], f32("var_eps", row), "AddOptions")],
               f32("inv", row))  # fmt: skip
    y = step("MUL", [d, inv], f32("normed"), "MulOptions")
    for k, (code, opts) in enumerate((("MUL", "MulOptions"), ("ADD", "AddOptions")), start=1):
        if len(op.inputs) > k:
            const = w.graph.tensors[op.inputs[k]]
            if (
                const.data is None
                or const.dtype != "float32"
                or const.data.size != math.prod(shape)
            ):
                raise ExportError(
                    f"op `{op.name}` (LAYER_NORM): input {k} `{const.name}` must be a float32 "
                    f"constant of {math.prod(shape)} values"
                )
            c = f32(f"c{k}", shape, const.data)
            y = step(code, [y, c], f32("weighted" if k == 1 else "biased"), opts)
    w.emit("QUANTIZE", [y], out)


def _argmax(w: Writer, op: Op, out: list[int]) -> None:
    """ARG_MAX (int32; its reference keeps the first maximum, strict >, as ours does), CAST to
    the int8 class map (indices below 128: exact), RESHAPE when the op keeps the axis."""
    a, x = ArgmaxAttrs.of(op), w.graph.tensors[op.inputs[0]]
    y_q = _params(w, op.outputs[0])
    if (float(y_q.scale[0]), int(y_q.zero_point[0])) != INDEX_Q or x.shape[a.axis] > 128:
        raise ExportError(
            f"op `{op.name}` (ARGMAX): needs at most 128 classes and an output of scale 1, zero "
            "point 0 (class indices)"
        )
    axis = a.axis % len(x.shape)
    dropped = tuple(d for i, d in enumerate(x.shape) if i != axis)
    index = w.add_tensor(f"{op.name}/index", dropped, "int32", None)
    opts = ("ArgMaxOptions", w.options("ArgMaxOptions", outputType=w.S.TensorType.INT32))
    w.emit("ARG_MAX", [w.tensor(x.name), w.const_i32(f"{op.name}/axis", [axis])], [index], opts)
    cast = w.options(
        "CastOptions", inDataType=w.S.TensorType.INT32, outDataType=w.S.TensorType.INT8
    )
    classes = w.add_tensor(f"{op.name}/classes", dropped, "int8", y_q) if a.keepdims else out[0]
    w.emit("CAST", [index], [classes], ("CastOptions", cast))
    if a.keepdims:
        shape = [int(d) for d in w.graph.tensors[op.outputs[0]].shape]
        ins = [classes, w.const_i32(f"{op.name}/shape", shape)]
        w.emit("RESHAPE", ins, out, ("ReshapeOptions", w.options("ReshapeOptions", newShape=shape)))


def _batch_matmul(w: Writer, op: Op, out: list[int]) -> None:
    """BATCH_MATMUL of two int8 activations: TFLite's int8 BatchMatMul computes what
    mdla_quant's kernel does (int32 sums, MBQM, the output offset)."""
    a = MatmulAttrs.of(op)
    opts = w.options("BatchMatMulOptions", adjX=a.adj_x, adjY=a.adj_y)
    w.emit("BATCH_MATMUL", [w.tensor(n) for n in op.inputs], out, ("BatchMatMulOptions", opts))


# One line per op a CPU partition runs that the device graph exporter did not have.
HOST: dict[OpKind, Emit] = {
    OpKind.TRANSPOSE: _transpose,  # TRANSPOSE (int8 codes)
    OpKind.STRIDED_SLICE: _strided_slice,  # STRIDED_SLICE (int8 codes)
    **dict.fromkeys(group("table"), _table),  # CAST int32, ADD 128, GATHER the int8 table
    OpKind.LAYER_NORM: _layer_norm,  # DEQUANTIZE, float32 builtins, QUANTIZE
    OpKind.ARGMAX: _argmax,  # ARG_MAX int32, CAST int8 [, RESHAPE]
    OpKind.BATCH_MATMUL: _batch_matmul,  # BATCH_MATMUL int8 (adj_x, adj_y)
}
