"""The CPU partition's ops in the .tflite export (issue 17, `export/host_ops.py`), each against
the int8 reference on LiteRT's BUILTIN_REF: TRANSPOSE, GELU (a lookup of the graph's own
table), LAYER_NORM (float32 builtins: every float32 step bit for bit, not only the int8
result) and ARGMAX (ties, keepdims, axes), and the errors naming what cannot be exported."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.tools import flatbuffer_utils

from mdla_ir.affine import dequantize_output
from mdla_ir.builders import act, as_floats, const, qp, random_codes, single_op_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_quant.kernels.float_ops import layer_norm_f32
from mdla_quant.kernels.functions import with_tables
from mdla_runtime import ExportError
from mdla_runtime.export import ops as export_ops
from mdla_runtime.export.tflite import (
    UnexportableOpError,
    run_tflite_reference,
    run_tflite_tensors,
    tflite_bytes,
)

Array = np.ndarray[Any, Any]
CODES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


def operators(graph: Graph) -> list[str]:
    model = flatbuffer_utils.read_model_from_bytearray(tflite_bytes(graph))
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    return [CODES[codes[op.opcodeIndex]] for op in model.subgraphs[0].operators]


def assert_bit_exact(graph: Graph, codes: list[Array]) -> Array:
    (ours,) = run_int8(graph, as_floats(graph, codes), raw=True)
    (theirs,) = run_tflite_reference(tflite_bytes(graph), codes)
    assert theirs.dtype == np.int8
    np.testing.assert_array_equal(theirs, ours)
    return ours


def layer_norm(
    shape: tuple[int, ...], normalized: tuple[int, ...], consts: int, rng: np.random.Generator
) -> Graph:
    n = int(np.prod(normalized))
    extra = [const(f"c{k}", rng.normal(size=n).astype(np.float32), None) for k in range(consts)]
    x = act("x", shape, qp(rng.uniform(0.01, 0.2), int(rng.integers(-20, 20))))
    attrs = {"eps": 1e-6, "normalized_shape": normalized}
    return single_op_qgraph(OpKind.LAYER_NORM, [x, *extra], shape, qp(0.03, 3), attrs)


@pytest.mark.parametrize(
    ("shape", "normalized", "consts", "last"),
    [
        ((1, 4, 5, 96), (96,), 2, "biased"),
        ((1, 2, 3, 768), (768,), 2, "biased"),
        ((2, 7), (7,), 1, "weighted"),
        ((1, 3, 4, 6), (4, 6), 0, "normed"),  # two normalized axes: MEAN over both
    ],
)
def test_layer_norm_is_the_references_float32_to_the_last_bit(
    shape: tuple[int, ...], normalized: tuple[int, ...], consts: int, last: str
) -> None:
    """Every float32 element before QUANTIZE equals `layer_norm_f32` bit for bit (LiteRT's MEAN
    sums left to right in float32 and divides by n; RSQRT is 1 / sqrt), so the int8 result is
    the reference's; numpy's pairwise mean, another correct float32 LayerNorm, differs."""
    rng = np.random.default_rng(sum(shape))
    g = layer_norm(shape, normalized, consts, rng)
    assert operators(g)[:3] == ["DEQUANTIZE", "MEAN", "SUB"]
    assert operators(g)[-1] == "QUANTIZE"
    codes = random_codes(g, rng)
    ours = assert_bit_exact(g, codes)
    tensors = run_tflite_tensors(tflite_bytes(g), codes)
    np.testing.assert_array_equal(tensors["out"], ours)
    x_q = g.tensors["x"].quant
    assert x_q is not None
    x = dequantize_output(codes[0], x_q.scale[0], x_q.zero_point[0])
    np.testing.assert_array_equal(tensors["layer_norm0/x"], x)  # DEQUANTIZE
    n = int(np.prod(normalized))
    w, b = (g.tensors[f"c{k}"].data if consts > k else None for k in (0, 1))
    want = layer_norm_f32(x, n, 1e-6, w, b)
    got = tensors[f"layer_norm0/{last}"]
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    if n >= 96:  # pairwise summation (numpy's mean) rounds differently: the order matters
        rows = x.reshape(-1, n)
        mean = rows.mean(axis=1, keepdims=True, dtype=np.float32)
        d = rows - mean
        inv = np.float32(1) / np.sqrt((d * d).mean(axis=1, keepdims=True) + np.float32(1e-6))
        pairwise = ((d * inv) * w + b).reshape(x.shape)
        assert np.any(pairwise.view(np.int32) != got.view(np.int32))


def gelu(shape: tuple[int, ...]) -> Graph:
    g = single_op_qgraph(OpKind.GELU, [act("x", shape, qp(0.05, -10))], shape, qp(0.02, -100))
    return with_tables(g)


def test_gelu_is_a_lookup_of_the_graphs_own_table() -> None:
    """All 256 codes through CAST, ADD 128, GATHER give the table the .mdla carries; a changed
    table changes the export's output the same way (it reads the graph's table, it does not
    recompute GELU: LiteRT's own int8 GELU builds its table with its own rounding)."""
    g = gelu((1, 16, 16, 1))
    assert operators(g) == ["CAST", "ADD", "GATHER"]
    codes = [np.arange(-128, 128, dtype=np.int8).reshape(1, 16, 16, 1)]
    table = g.tensors["gelu0.table"].data
    assert table is not None
    np.testing.assert_array_equal(assert_bit_exact(g, codes).ravel(), table)
    rolled = np.roll(table, 1)
    tensors = {**g.tensors, "gelu0.table": replace(g.tensors["gelu0.table"], data=rolled)}
    edited = g.with_(tensors=tensors)
    (theirs,) = run_tflite_reference(tflite_bytes(edited), codes)
    np.testing.assert_array_equal(theirs.ravel(), rolled)


def argmax(shape: tuple[int, ...], axis: int, keepdims: bool, out_q: tuple[float, int]) -> Graph:
    out = list(shape)
    out[axis] = 1
    if not keepdims:
        del out[axis]
    attrs = {"axis": axis, "keepdims": keepdims}
    return single_op_qgraph(OpKind.ARGMAX, [act("x", shape, qp(0.1, 0))], out, qp(*out_q), attrs)


@pytest.mark.parametrize(
    ("shape", "axis", "keepdims"),
    [
        ((1, 6, 7, 5), 3, False),
        ((1, 6, 7, 5), 1, True),
        ((2, 9), -1, False),
        ((1, 2, 128), 2, True),
    ],
)
def test_argmax_is_arg_max_then_cast(shape: tuple[int, ...], axis: int, keepdims: bool) -> None:
    """Codes from 5 values: many ties, and ARG_MAX's reference keeps the first maximum too."""
    g = argmax(shape, axis, keepdims, (1.0, 0))
    assert operators(g) == ["ARG_MAX", "CAST", *(["RESHAPE"] if keepdims else [])]
    rng = np.random.default_rng(len(shape) + axis)
    codes = [rng.integers(-2, 3, shape).astype(np.int8)]
    got = assert_bit_exact(g, codes)
    np.testing.assert_array_equal(got, np.argmax(codes[0], axis=axis, keepdims=keepdims))


@pytest.mark.parametrize(
    ("shape", "out_q"), [((1, 2, 129), (1.0, 0)), ((1, 2, 4), (0.5, 0)), ((1, 2, 4), (1.0, 3))]
)
def test_argmax_refuses_what_is_no_class_index(
    shape: tuple[int, ...], out_q: tuple[float, int]
) -> None:
    with pytest.raises(ExportError, match=r"`argmax0` \(ARGMAX\): needs at most 128 classes"):
        tflite_bytes(argmax(shape, 2, False, out_q))


@pytest.mark.parametrize(
    ("shape", "perm"),
    [
        ((3, 5), (1, 0)),
        ((1, 4, 5, 6), (0, 3, 1, 2)),
        ((1, 4, 5, 6), (0, 2, 3, 1)),
        ((2, 3, 4, 5, 6), (4, 0, 3, 1, 2)),
    ],
)
def test_transpose_moves_codes(shape: tuple[int, ...], perm: tuple[int, ...]) -> None:
    q = qp(0.05, -10)
    out = tuple(shape[p] for p in perm)
    g = single_op_qgraph(OpKind.TRANSPOSE, [act("x", shape, q)], out, q, {"perm": perm})
    assert operators(g) == ["TRANSPOSE"]
    codes = random_codes(g, np.random.default_rng(len(shape)))
    np.testing.assert_array_equal(assert_bit_exact(g, codes), codes[0].transpose(perm))


def test_what_cannot_be_exported_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    q = qp(0.05, -10)
    t = single_op_qgraph(
        OpKind.TRANSPOSE, [act("x", (2, 3), q)], (3, 2), qp(0.1, 0), {"perm": (1, 0)}
    )
    with pytest.raises(ExportError, match=r"`transpose0` \(TRANSPOSE\): input and output quant"):
        tflite_bytes(t)
    bare = single_op_qgraph(OpKind.GELU, [act("x", (4,), q)], (4,), q)  # no table attached
    with pytest.raises(ExportError, match=r"`gelu0` \(GELU\): no table input"):
        tflite_bytes(bare)
    rng = np.random.default_rng(0)
    ln = layer_norm((1, 3, 4, 6), (3, 4), 0, rng)
    with pytest.raises(ExportError, match=r"normalized shape \(3, 4\) is not the trailing"):
        tflite_bytes(ln)
    # A host op the exporter has no form for (as a new one would be until it gets one):
    monkeypatch.delitem(export_ops._EMITTERS, OpKind.ARGMAX)
    with pytest.raises(UnexportableOpError, match=r"ARGMAX has no \.tflite export \(a CPU part"):
        tflite_bytes(argmax((1, 2, 4), 2, False, (1.0, 0)))
