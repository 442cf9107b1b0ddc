"""The operations a compute leaves out (abi/plan.c): SiLU's LOGISTIC when nothing reads it.

MUL(x, LOGISTIC(x)) is one table of x in the MUL, so the sigmoid's tensor is read by nobody
when it is a temporary whose only readers are such MULs: the LOGISTIC is not run. Every test
here runs a createForDebug compilation, whose report says per operation whether it ran
("<index> <code> <ns>") or was left out ("<index> <code> 0 skipped"), and compares every model
output with run_int8: a tensor the model exposes is always computed.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from mdla_ir.builders import act, as_floats, qp
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from tests.runtime.test_emu_support import (
    FUSE,
    NO_ERROR,
    QUANT8_SIGNED,
    Array,
    Compiled,
    NeuronModelBuilder,
    emu,
)

LOGISTIC, MUL, RELU = 14, 18, 19
SHAPE = (2, 3, 5, 37)
X, SIG, Y, Z = qp(0.06, 9), qp(1 / 256, -128), qp(0.03, -60), qp(1 / 256, -128)

# name -> (ops as (kind, inputs, output), model outputs); the input is "x"
CASES = {
    # the sigmoid read only by its SiLU MUL, not exposed: left out
    "silu": ((("LOGISTIC", ("x",), "sig"), ("MUL", ("x", "sig"), "y")), ("y",)),
    # the same with the sigmoid as the MUL's first operand
    "silu_swapped": ((("LOGISTIC", ("x",), "sig"), ("MUL", ("sig", "x"), "y")), ("y",)),
    # the sigmoid also a model output: it runs
    "exposed": ((("LOGISTIC", ("x",), "sig"), ("MUL", ("x", "sig"), "y")), ("y", "sig")),
    # a RELU reads the sigmoid too: it runs
    "other_reader": (
        (("LOGISTIC", ("x",), "sig"), ("MUL", ("x", "sig"), "y"), ("RELU", ("sig",), "z")),
        ("y", "z"),
    ),
    # MUL(sig, sig) is no SiLU (the gate of a gate): it reads the sigmoid, which runs
    "squared": ((("LOGISTIC", ("x",), "sig"), ("MUL", ("sig", "sig"), "y")), ("y",)),
}
SKIPPED = {"silu": [0], "silu_swapped": [0]}


def graph(case: str) -> Graph:
    ops, outputs = CASES[case]
    quant = {"x": X, "sig": SIG, "y": Y, "z": Z}
    tensors = {n: act(n, SHAPE, quant[n]) for n in {"x", *(o for _, _, o in ops)}}
    kinds = {"LOGISTIC": OpKind.LOGISTIC, "MUL": OpKind.MUL, "RELU": OpKind.RELU}
    attrs = {"MUL": {"fuse": "NONE"}}
    return Graph(
        case,
        tensors,
        tuple(Op(kinds[k], f"op{i}", ins, (o,), attrs.get(k)) for i, (k, ins, o) in enumerate(ops)),
        ("x",),
        outputs,
        layout="NHWC",
    )


def debug_compile(case: str, report: Path) -> Compiled:
    """The case's Neuron model, compiled for debug with its report at `report`."""
    ops, outputs = CASES[case]
    b = NeuronModelBuilder()
    quant = {"x": X, "sig": SIG, "y": Y, "z": Z}
    index = {"x": b.operand(QUANT8_SIGNED, SHAPE, X.scale[0], X.zero_point[0])}
    codes = {"LOGISTIC": LOGISTIC, "MUL": MUL, "RELU": RELU}
    for kind, ins, out in ops:
        q = quant[out]
        index[out] = b.operand(QUANT8_SIGNED, SHAPE, q.scale[0], q.zero_point[0])
        extra = [b.i32(FUSE["NONE"])] if kind == "MUL" else []
        assert b.operation(codes[kind], [index[n] for n in ins] + extra, [index[out]]) == 0
    assert b.identify([index["x"]], [index[n] for n in outputs]) == NO_ERROR
    lib = emu()
    assert lib.NeuronDebug_setReportPath(b.handle, str(report).encode()) == NO_ERROR
    assert b.finish() == NO_ERROR
    c = ctypes.c_void_p()
    assert lib.NeuronCompilation_createForDebug(b.handle, ctypes.byref(c)) == NO_ERROR
    assert lib.NeuronCompilation_finish(c) == NO_ERROR
    return Compiled(c, [SHAPE] * len(outputs))


@pytest.mark.parametrize("case", CASES)
def test_a_sigmoid_only_silu_reads_is_left_out_and_every_output_is_exact(
    case: str, tmp_path: Path
) -> None:
    codes = np.resize(np.arange(-128, 128), SHAPE).astype(np.int8)
    g = graph(case)
    want: list[Array] = run_int8(g, as_floats(g, [codes]), raw=True)
    report = tmp_path / "report.txt"
    compiled = debug_compile(case, report)
    try:
        got = compiled.run([codes])
    finally:
        compiled.free()
    for name, a, b in zip(CASES[case][1], got, want, strict=True):
        np.testing.assert_array_equal(a, np.asarray(b).reshape(SHAPE), err_msg=name)
    rows = [line.split() for line in report.read_text().splitlines()]
    assert [int(r[0]) for r in rows] == list(range(len(CASES[case][0])))
    skipped = [int(r[0]) for r in rows if r[3:] == ["skipped"]]
    assert skipped == SKIPPED.get(case, [])
    assert all(r[2] == "0" for r in rows if int(r[0]) in skipped)
