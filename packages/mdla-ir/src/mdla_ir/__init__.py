"""mdla_ir: the flat IR of the mdla toolchain.

    graph = mdla_ir.from_torch(model.eval(), torch.randn(1, 3, 224, 224))
    print(graph)                                  # the op table
    mdla_ir.verify(graph)                         # structural checks, messages name the op
    logits, = mdla_ir.run_float(graph, [x])       # numpy float32 reference, model layout
    graph = mdla_ir.run_passes(graph, passes)     # pure passes, verified after each

Importing this package never imports torch; `from_torch` loads it on use. Model specs
(`load_model`) live one floor up, in `mdla_zoo`.
"""

from __future__ import annotations

import importlib
from typing import Any

from mdla_ir import stored as stored  # a float graph as data (`compile` writes it per .mdla)
from mdla_ir.errors import IRError, UnsupportedError, VerifyError
from mdla_ir.graph import Graph, Op, QuantParams, Source, Tensor, same_graph
from mdla_ir.imported import DEFAULT_PATH, PATHS, Imported
from mdla_ir.interp import evaluate, run_float
from mdla_ir.ops import OpKind
from mdla_ir.passes import DEFAULT_PASSES, PassResult, Stage, run_passes, run_stages
from mdla_ir.provenance import (
    Accumulator,
    Numerics,
    Postprocess,
    Preprocess,
    Provenance,
    QuantRecord,
    Rounding,
)
from mdla_ir.verify import verify


def from_torch(
    module: Any,
    example_inputs: Any,
    name: str | None = None,
    optimize: bool = True,
    path: str = DEFAULT_PATH,
) -> Graph:
    """Import `module` into the flat IR by `path`: "fx" (symbolic tracing), "export"
    (torch.export to core ATen) or "auto" (export, else fx; see `mdla_ir.importer`)."""
    return import_torch(module, example_inputs, name, optimize, path).graph


def import_torch(
    module: Any,
    example_inputs: Any,
    name: str | None = None,
    optimize: bool = True,
    path: str = DEFAULT_PATH,
) -> Imported:
    """`from_torch`, with the path that imported the module and a note saying why."""
    importer = importlib.import_module("mdla_ir.importer")
    imported: Imported = importer.import_torch(module, example_inputs, name, optimize, path)
    return imported


__all__ = [
    "DEFAULT_PASSES",
    "DEFAULT_PATH",
    "PATHS",
    "Accumulator",
    "Graph",
    "IRError",
    "Imported",
    "Numerics",
    "Op",
    "OpKind",
    "PassResult",
    "Postprocess",
    "Preprocess",
    "Provenance",
    "QuantParams",
    "QuantRecord",
    "Rounding",
    "Source",
    "Stage",
    "Tensor",
    "UnsupportedError",
    "VerifyError",
    "evaluate",
    "from_torch",
    "import_torch",
    "run_float",
    "run_passes",
    "run_stages",
    "same_graph",
    "verify",
]
