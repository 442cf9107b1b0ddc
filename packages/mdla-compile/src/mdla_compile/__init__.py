"""mdla_compile: the compile as one call. Options in; the float, device and int8 graphs, the
report and the `.mdla` (and `.tflite`) out; progress as typed events.

    options = CompileOptions("efficientnet_lite0", calib="samples", count=6)
    compiled = compile(options, on_event=print)      # import, legalize, calibrate, quantize
    manifest = compiled.save("lite0.mdla", tflite="lite0.tflite")
"""

from __future__ import annotations

from mdla_compile.calibration import calibration_inputs
from mdla_compile.compiled import Compiled, quantize_graph
from mdla_compile.contract import Contract, contract_from
from mdla_compile.errors import CompileError, OptionError
from mdla_compile.events import (
    AdaRoundLayer,
    CalibrationTick,
    Event,
    Imported,
    Note,
    OnEvent,
    Placed,
    Stage,
    StageFinished,
    StageStarted,
)
from mdla_compile.options import CompileOptions
from mdla_compile.output import check_output, support_count, support_of_bytes
from mdla_compile.pipeline import compile
from mdla_compile.placement import legalize_graph, place_graph, rule_names
from mdla_compile.report import Report
from mdla_compile.source import Source, load_source, prepare_image, random_weights_warning

__all__ = [
    "AdaRoundLayer",
    "CalibrationTick",
    "CompileError",
    "CompileOptions",
    "Compiled",
    "Contract",
    "Event",
    "Imported",
    "Note",
    "OnEvent",
    "OptionError",
    "Placed",
    "Report",
    "Source",
    "Stage",
    "StageFinished",
    "StageStarted",
    "calibration_inputs",
    "check_output",
    "compile",
    "contract_from",
    "legalize_graph",
    "load_source",
    "place_graph",
    "prepare_image",
    "quantize_graph",
    "random_weights_warning",
    "rule_names",
    "support_count",
    "support_of_bytes",
]
