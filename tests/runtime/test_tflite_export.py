"""export_tflite: the flatbuffer's structure, padding lowering, errors, and import hygiene."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mdla_ir.builders import act, as_floats, const, qp, random_codes, single_op_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.provenance import QuantRecord
from mdla_quant import run_int8
from mdla_runtime import ExportError, export_tflite
from mdla_runtime.export.tflite import (
    UnexportableRoundingError,
    padding_mode,
    run_tflite_reference,
    tflite_bytes,
)


def _read(path: Path) -> object:
    from ai_edge_litert.tools import flatbuffer_utils

    return flatbuffer_utils.read_model_from_bytearray(bytearray(path.read_bytes()))


def _conv(padding: tuple[int, int, int, int], hw: int = 8, stride: int = 2) -> Graph:
    rng = np.random.default_rng(0)
    oh = (hw + padding[0] + padding[1] - 3) // stride + 1
    ow = (hw + padding[2] + padding[3] - 3) // stride + 1
    ws = np.array([0.01, 0.02, 0.03], np.float32)
    return single_op_qgraph(
        OpKind.CONV_2D,
        [
            act("x", (1, hw, hw, 2), qp(0.05, 7)),
            const("w", rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8), qp(ws, 0, 0)),
        ],
        (1, oh, ow, 3),
        qp(0.1, -5),
        {
            "stride": (stride, stride),
            "dilation": (1, 1),
            "padding": padding,
            "groups": 1,
            "fuse": "RELU",
        },
    )


def test_export_writes_a_readable_int8_model(tmp_path: Path) -> None:
    from ai_edge_litert import schema_py_generated as schema

    path = export_tflite(_conv((0, 1, 0, 1)), tmp_path / "conv.tflite")
    blob = path.read_bytes()
    assert blob[4:8] == b"TFL3"
    model = _read(path)
    sg = model.subgraphs[0]  # type: ignore[attr-defined]
    ops = [
        model.operatorCodes[o.opcodeIndex].builtinCode  # type: ignore[attr-defined]
        for o in sg.operators
    ]
    assert ops == [schema.BuiltinOperator.CONV_2D]  # (0,1,0,1) at stride 2 on 8x8 is SAME
    assert sg.operators[0].builtinOptions.padding == schema.Padding.SAME
    x, w = sg.tensors[sg.inputs[0]], sg.tensors[sg.operators[0].inputs[1]]
    assert x.type == schema.TensorType.INT8
    assert list(x.shape) == [1, 8, 8, 2]
    assert list(x.quantization.zeroPoint) == [7]
    assert list(w.quantization.scale) == pytest.approx([0.01, 0.02, 0.03])
    assert w.quantization.quantizedDimension == 0
    bias = sg.tensors[sg.operators[0].inputs[2]]  # LiteRT requires one: a zero bias is added
    assert bias.type == schema.TensorType.INT32


def test_unaligned_padding_becomes_pad_plus_valid(tmp_path: Path) -> None:
    from ai_edge_litert import schema_py_generated as schema

    g = _conv((1, 1, 1, 1))
    model = _read(export_tflite(g, tmp_path / "conv.tflite"))
    sg = model.subgraphs[0]  # type: ignore[attr-defined]
    codes = [
        model.operatorCodes[o.opcodeIndex].builtinCode  # type: ignore[attr-defined]
        for o in sg.operators
    ]
    assert codes == [schema.BuiltinOperator.PAD, schema.BuiltinOperator.CONV_2D]
    assert sg.operators[1].builtinOptions.padding == schema.Padding.VALID
    rng = np.random.default_rng(1)
    c = random_codes(g, rng)
    assert np.array_equal(
        run_int8(g, as_floats(g, c), raw=True)[0], run_tflite_reference(tflite_bytes(g), c)[0]
    )


@pytest.mark.parametrize(
    ("in_hw", "kernel", "stride", "padding", "out_hw", "mode"),
    [
        ((8, 8), (3, 3), (1, 1), (1, 1, 1, 1), (8, 8), "SAME"),
        ((8, 8), (3, 3), (2, 2), (0, 1, 0, 1), (4, 4), "SAME"),
        ((8, 8), (3, 3), (2, 2), (1, 1, 1, 1), (4, 4), None),
        ((8, 8), (3, 3), (1, 1), (0, 0, 0, 0), (6, 6), "VALID"),
        ((9, 9), (2, 2), (2, 2), (0, 1, 0, 1), (4, 4), "VALID"),  # the extra row is never read
        ((7, 7), (3, 3), (1, 1), (2, 0, 2, 0), (7, 7), None),
    ],
)
def test_padding_mode(
    in_hw: tuple[int, int],
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int, int, int],
    out_hw: tuple[int, int],
    mode: str | None,
) -> None:
    assert padding_mode(in_hw, kernel, stride, (1, 1), padding, out_hw) == mode


def test_unexportable_graphs_raise_export_error() -> None:
    q = qp(0.1, 0)
    pool = single_op_qgraph(
        OpKind.AVERAGE_POOL_2D,
        [act("x", (1, 7, 7, 2), q)],
        (1, 7, 7, 2),
        q,
        {"kernel": (3, 3), "stride": (1, 1), "padding": (2, 0, 2, 0)},
    )
    with pytest.raises(ExportError, match=r"`average_pool_2d0`.*neither SAME nor VALID"):
        tflite_bytes(pool)
    soft = single_op_qgraph(  # exported since issue 18: TRANSPOSE, SOFTMAX, TRANSPOSE
        OpKind.SOFTMAX, [act("x", (2, 3), q)], (2, 3), qp(1 / 256, -128), {"axis": 0}
    )
    assert tflite_bytes(soft)[4:8] == b"TFL3"
    relu = single_op_qgraph(OpKind.RELU, [act("x", (4,), q)], (4,), q)
    with pytest.raises(ExportError, match="layout NCHW"):
        tflite_bytes(relu.with_(layout="NCHW"))
    t = single_op_qgraph(OpKind.TRANSPOSE, [act("x", (2, 3), q)], (3, 2), q, {"perm": (1, 0)})
    assert tflite_bytes(t)[4:8] == b"TFL3"  # exported since issue 17 (a CPU partition's op)
    silu = single_op_qgraph(OpKind.SILU, [act("x", (4,), q)], (4,), q)  # no int8 form at all
    with pytest.raises(ExportError, match=r"`silu0`: SILU has no \.tflite export$"):
        tflite_bytes(silu)


def test_a_single_rounding_graph_is_refused_and_nothing_written(tmp_path: Path) -> None:
    """A .tflite has no rounding field and LiteRT rounds twice: the file would compute double
    rounding while the graph means single (a 1x1 conv differed on 4 of 4 values)."""
    g = _conv((1, 1, 1, 1))
    single = g.with_(
        provenance=dataclasses.replace(g.provenance, quant=QuantRecord(rounding="single"))
    )
    with pytest.raises(UnexportableRoundingError, match="TFLITE_SINGLE_ROUNDING"):
        export_tflite(single, tmp_path / "single.tflite")
    assert not (tmp_path / "single.tflite").exists()
    assert export_tflite(g, tmp_path / "double.tflite").stat().st_size > 0


def test_runtime_imports_neither_torch_nor_litert() -> None:
    code = (
        "import sys, mdla_runtime; "
        "bad = [m for m in ('torch', 'ai_edge_litert') if m in sys.modules]; "
        "sys.exit(repr(bad) if bad else 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
