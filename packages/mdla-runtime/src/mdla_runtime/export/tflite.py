"""`export_tflite`: write an int8 NHWC qgraph as a .tflite flatbuffer (LiteRT's schema).

A placed graph (issue 17, `workbench compile --cpu`) is written as one graph too, its CPU
partitions' ops as TFLite builtins (`host_ops.py`), so LiteRT places every op itself.

The file is the oracle's input: LiteRT's reference kernels (`OpResolverType.BUILTIN_REF`) run it
and must agree bit for bit with `mdla_quant.run_int8(qgraph, x, raw=True)`. Its inputs and
outputs are the graph's int8 device tensors (NHWC). Explicit paddings become SAME or VALID when
they are equivalent; otherwise CONV_2D/DEPTHWISE_CONV_2D get a PAD (zero point = real 0) and
MAX_POOL_2D a PADV2 (-128, which never wins) in front of a VALID op. AVERAGE_POOL_2D excludes
padding from its count, so a padding that is neither SAME nor VALID is an error there. A graph
quantized with single rounding is refused: the file cannot say how its requantizations round,
and LiteRT's kernels round twice (TFLite's default build).

Needs the `ai-edge-litert` package (extra `mdla-runtime[tflite]`), imported on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mdla_ir.graph import Graph
from mdla_runtime.atomic import write_atomic
from mdla_runtime.export.ops import emit_op
from mdla_runtime.export.writer import (
    ExportError,
    UnexportableOpError,
    UnexportableRoundingError,
    Writer,
    check_rounding,
    padding_mode,
)

__all__ = [
    "ExportError",
    "UnexportableOpError",
    "UnexportableRoundingError",
    "check_rounding",
    "export_tflite",
    "padding_mode",
    "run_tflite_reference",
    "run_tflite_tensors",
    "tflite_bytes",
]


def tflite_bytes(qgraph: Graph) -> bytes:
    """The .tflite flatbuffer of `qgraph` (see `export_tflite`)."""
    if qgraph.layout != "NHWC":
        raise ExportError(f"graph `{qgraph.name}` has layout {qgraph.layout}; export needs NHWC")
    check_rounding(qgraph.provenance.rounding.value, qgraph.name)
    w = Writer(qgraph)
    for name in qgraph.inputs:
        w.tensor(name)
    for op in qgraph.ops:
        emit_op(w, op)
    return w.model()


def run_tflite_reference(
    model: bytes, inputs: Sequence[np.ndarray[Any, Any]]
) -> list[np.ndarray[Any, Any]]:
    """Run a .tflite model on LiteRT's reference kernels (BUILTIN_REF): int8 in, the graph's
    outputs out (int8; int16 for a 16x8 output, float32 for a float region's).

    `inputs` follow the subgraph's input order; raises ImportError without `ai-edge-litert`.
    """
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for detail, x in zip(it.get_input_details(), inputs, strict=True):
        it.set_tensor(detail["index"], np.ascontiguousarray(x))
    it.invoke()
    return [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]


def run_tflite_tensors(
    model: bytes, inputs: Sequence[np.ndarray[Any, Any]]
) -> dict[str, np.ndarray[Any, Any]]:
    """Every tensor of one BUILTIN_REF run of `model`, by name (LiteRT's
    `experimental_preserve_all_tensors`): the graph's own tensors keep their names in the
    export, so each can be compared with what `mdla_quant.run_int8` computes for it."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(
        model_content=model,
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    it.allocate_tensors()
    for detail, x in zip(it.get_input_details(), inputs, strict=True):
        it.set_tensor(detail["index"], np.ascontiguousarray(x))
    it.invoke()
    return {d["name"]: np.array(it.get_tensor(d["index"])) for d in it.get_tensor_details()}


def export_tflite(qgraph: Graph, path: str | Path) -> Path:
    """Write `qgraph` (int8, NHWC) as a .tflite file at `path`, atomically; returns the path."""
    return write_atomic(path, tflite_bytes(qgraph))
