"""How the new ops are written to .tflite (and that LiteRT's reference agrees bit for bit): a
LeakyReLU as PRELU, a cropped TRANSPOSE_CONV_2D as TRANSPOSE_CONV VALID + SLICE, the resizes and
DEPTH_TO_SPACE with their options."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.tools import flatbuffer_utils

from mdla_ir.builders import as_floats, random_codes, random_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes

CODES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


def operators(graph: Graph) -> list[str]:
    model = flatbuffer_utils.read_model_from_bytearray(tflite_bytes(graph))
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    return [CODES[codes[op.opcodeIndex]] for op in model.subgraphs[0].operators]


def graphs(kind: OpKind, n: int, seed: int) -> list[Graph]:
    rng = np.random.default_rng(seed)
    return [random_qgraph(kind, rng) for _ in range(n)]


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        (OpKind.PRELU, {("PRELU",)}),
        (OpKind.DEPTH_TO_SPACE, {("DEPTH_TO_SPACE",)}),
        (OpKind.RESIZE_NEAREST_NEIGHBOR, {("RESIZE_NEAREST_NEIGHBOR",)}),
        (OpKind.TRANSPOSE_CONV_2D, {("TRANSPOSE_CONV",), ("TRANSPOSE_CONV", "SLICE")}),
    ],
    ids=lambda v: v.name if isinstance(v, OpKind) else "",
)
def test_operators_written(kind: OpKind, names: set[tuple[str, ...]]) -> None:
    seen = {tuple(operators(g)) for g in graphs(kind, 30, 7)}
    assert seen == names


def test_a_crop_becomes_a_slice_and_stays_bit_exact() -> None:
    rng = np.random.default_rng(3)
    cropped = [g for g in graphs(OpKind.TRANSPOSE_CONV_2D, 60, 3) if any(g.ops[0].attrs.padding)]
    assert len(cropped) > 20
    for g in cropped:
        assert operators(g) == ["TRANSPOSE_CONV", "SLICE"]
        codes = random_codes(g, rng)
        (ours,) = run_int8(g, as_floats(g, codes), raw=True)
        (theirs,) = run_tflite_reference(tflite_bytes(g), codes)
        np.testing.assert_array_equal(ours, theirs)
