"""Test builders for int16 graph outputs (a 16x8 op's output, TENSOR_QUANT16_SYMM, zero point
0): the smallest such graph and one malformation per int16 I/O check of both manifest readers
(format/semantic.py `io`, C manifest_check.c `sem_io`)."""

from __future__ import annotations

from mdla_ir.builders import act, qp
from mdla_ir.graph import Graph, Op, Tensor
from mdla_ir.ops import OpKind
from mdla_runtime import errors
from mdla_runtime.format import container as fmt
from mdla_runtime.format.manifest import to_bytes
from mdla_runtime.testing import Edit, Header, Malformed, _edit, split

SCALE16 = 0.25 / 32767  # the int16 output's scale: int8 x at 1/512 spans it with room


def int16_output_qgraph() -> Graph:
    """x (1, 8) int8 -> QUANTIZE -> y (1, 8) int16, the model's output."""
    tensors = [
        act("x", (1, 8), qp(1 / 512, -3)),
        Tensor("y", (1, 8), "int16", None, qp(SCALE16, 0)),
    ]
    ops = (Op(OpKind.QUANTIZE, "y/quantize", ("x",), ("y",)),)
    return Graph("int16_out", {t.name: t for t in tensors}, ops, ("x",), ("y",), "NHWC")


def int16_io_cases() -> list[Malformed]:
    """Inputs stay int8 (the host quantizes them); an int16 output keeps zero point 0."""
    blob = to_bytes(int16_output_qgraph())
    header, _ = split(blob)
    x, y = header["inputs"][0]["operand"], header["outputs"][0]["operand"]

    def int16_input(h: Header) -> None:
        h["operands"][x].update(type=fmt.TENSOR_QUANT16_SYMM, zero_point=0)
        h["inputs"][0]["zero_point"] = 0

    def output_zero_point(h: Header) -> None:
        h["operands"][y]["zero_point"] = 1
        h["outputs"][0]["zero_point"] = 1

    q = errors.BadQuantizationError
    edits: list[Edit] = [
        ("int16_model_input", int16_input, errors.BadReferenceError, "inputs[0].operand"),
        ("int16_output_zero_point", output_zero_point, q, f"operands[{y}].zero_point"),
        (
            "int16_output_io_zero_point",
            lambda h: h["outputs"][0].__setitem__("zero_point", 2),
            q,
            "outputs[0].zero_point",
        ),
    ]
    return [Malformed(n, _edit(blob, fn), kind, f) for n, fn, kind, f in edits]
