"""mdla_runtime: the .mdla manifest, the C engine on the Neuron ABI and the host emulator.

mdla_runtime.save(qgraph, "model.mdla"); m = mdla_runtime.load("model.mdla")   # the manifest
target = mdla_runtime.open_target("emu")        # or "lib:/path/libneuron_adapter.so"
result = target.run(m, [x], devices=("mtk-mdla",), ops=None, repeat=1)   # RunResult
mdla_runtime.export_tflite(qgraph, "model.tflite")   # int8 NHWC graph -> .tflite (LiteRT)
"""

from __future__ import annotations

from mdla_runtime.atomic import write_atomic
from mdla_runtime.build import compile_c
from mdla_runtime.engine.host import check_host, host_bytes
from mdla_runtime.engine.target import (
    PartitionTime,
    RunResult,
    StepProgress,
    Target,
    open_target,
)
from mdla_runtime.errors import (
    BuildError,
    LoweringError,
    ManifestError,
    TargetError,
    TargetSpecError,
)
from mdla_runtime.export.tflite import ExportError, export_tflite, tflite_bytes
from mdla_runtime.format.budget import Budget
from mdla_runtime.format.manifest import (
    IOSpec,
    Manifest,
    Operand,
    Operation,
    load,
    parse,
    save,
    to_bytes,
    written,
)

__all__ = [
    "Budget",
    "BuildError",
    "ExportError",
    "IOSpec",
    "LoweringError",
    "Manifest",
    "ManifestError",
    "Operand",
    "Operation",
    "PartitionTime",
    "RunResult",
    "StepProgress",
    "Target",
    "TargetError",
    "TargetSpecError",
    "check_host",
    "compile_c",
    "export_tflite",
    "host_bytes",
    "load",
    "open_target",
    "parse",
    "save",
    "tflite_bytes",
    "to_bytes",
    "write_atomic",
    "written",
]
