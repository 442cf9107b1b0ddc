"""The `.tflite` export of a partitioned model (issue 17) is one graph that LiteRT places itself,
and on LiteRT's reference kernels (BUILTIN_REF) it computes what `mdla_quant.run_int8`
computes: every tensor of the graph (so every partition's boundary tensors and every int8
partition's ops), read back with `experimental_preserve_all_tensors`, code for code. Models:
ConvNeXt-Tiny at 64 x 64 with LayerNorm and GELU on the CPU (139 ops, 83 partitions: its
Linears are 1x1 CONV_2Ds and its permutes are gone in the device layout), and the segmenter with
its argmax on the CPU (a class map)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.tools import flatbuffer_utils

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_ir.partitions import CPU, partitions
from mdla_quant.reference import quantize_inputs
from mdla_runtime.export.tflite import run_tflite_tensors, tflite_bytes
from tests.models_partitions import convnext_tiny_64
from tests.workbench.argmax_models import argmax_segmenter

Array = np.ndarray[Any, Any]
CODES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


def placed_qgraph(
    module: Any, x: Any, name: str, cpu: list[str], seed: int
) -> tuple[mdla_ir.Graph, mdla_ir.Graph]:
    """(the placed float device graph, its int8 graph) on 2 random calibration inputs."""
    graph = mdla_ir.from_torch(module, (x,), name=name)
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", cpu)
    rng = np.random.default_rng(seed)
    shape = tuple(x.shape)
    calib = [[rng.uniform(-1, 1, shape).astype(np.float32)] for _ in range(2)]
    return placed.graph, mdla_quant.quantize(placed.graph, calib)


def operator_counts(blob: bytes) -> tuple[int, Counter[str]]:
    model = flatbuffer_utils.read_model_from_bytearray(blob)
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    ops = model.subgraphs[0].operators
    return len(model.subgraphs), Counter(CODES[codes[op.opcodeIndex]] for op in ops)


def assert_every_tensor_agrees(qgraph: mdla_ir.Graph, blob: bytes, x: Array) -> list[Array]:
    """run_int8 (every activation it computes, through `observe`) against one BUILTIN_REF run of
    the export: the same tensors by name, code for code. Returns run_int8's raw outputs."""
    seen: dict[str, Array] = {}
    raw = mdla_quant.run_int8(qgraph, [x], raw=True, observe=seen.__setitem__)
    codes = quantize_inputs(qgraph, [x])
    theirs = run_tflite_tensors(blob, [codes[n] for n in qgraph.inputs])
    boundary = {n for p in partitions(qgraph) for n in (*p.inputs, *p.outputs)}
    assert boundary <= set(seen) <= set(theirs)
    differ = [n for n, v in seen.items() if not np.array_equal(theirs[n].reshape(v.shape), v)]
    assert differ == [], f"{len(differ)} of {len(seen)} tensors differ, first {differ[:3]}"
    return raw


@pytest.fixture(scope="module")
def convnext() -> mdla_ir.Graph:
    module, x = convnext_tiny_64()
    cpu = ["LAYER_NORM,GELU"]
    return placed_qgraph(module, x, "convnext_tiny", cpu, seed=1)[1]


def test_convnext_exports_as_one_graph_bit_exact(convnext: mdla_ir.Graph) -> None:
    """83 partitions, one .tflite subgraph: each GELU is CAST/ADD/GATHER, each LayerNorm 9 to 11
    float32 builtins between DEQUANTIZE and QUANTIZE; every tensor equals run_int8's."""
    parts = partitions(convnext)
    assert (len(parts), sum(p.device == CPU for p in parts)) == (83, 41)
    blob = tflite_bytes(convnext)
    subgraphs, ops = operator_counts(blob)
    assert subgraphs == 1
    kinds = Counter(op.kind.name for op in convnext.ops)
    assert ops["GATHER"] == kinds["GELU"] == 18
    assert ops["RSQRT"] == ops["DEQUANTIZE"] == ops["QUANTIZE"] == kinds["LAYER_NORM"] == 23
    assert ops.get("TRANSPOSE", 0) == kinds["TRANSPOSE"] == 0
    assert ops.get("FULLY_CONNECTED", 0) == kinds["FULLY_CONNECTED"] == 0
    assert ops["CONV_2D"] == kinds["CONV_2D"] == 41  # 36 of them the blocks' Linears
    x = np.random.default_rng(2).uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)
    (raw,) = assert_every_tensor_agrees(convnext, blob, x)
    assert raw.shape == (1, 1000)


def test_segmenter_class_map_is_arg_max_bit_exact() -> None:
    """Convs on the NPU, ARGMAX on the CPU: ARG_MAX int32, CAST to the int8 class map, the same
    map as run_int8's, and as the float graph's on most pixels (random weights)."""
    module, x0 = argmax_segmenter()
    fgraph, qgraph = placed_qgraph(module, x0, "seg", ["ARGMAX"], seed=4)
    assert [p.device for p in partitions(qgraph)] == ["mtk-mdla", CPU]
    blob = tflite_bytes(qgraph)
    subgraphs, ops = operator_counts(blob)
    assert (subgraphs, ops["ARG_MAX"], ops["CAST"]) == (1, 1, 1)
    x = np.random.default_rng(5).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    (raw,) = assert_every_tensor_agrees(qgraph, blob, x)
    assert raw.shape == (1, 32, 32)
    assert len(np.unique(raw)) >= 2
    (f,) = mdla_ir.run_float(fgraph, [x])
    agree = float(np.mean(f == raw))
    assert agree > 0.9, agree
