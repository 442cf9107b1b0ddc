"""`workbench export`: compile a model and write its int8 graph as .tflite (for LiteRT)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import mdla_runtime
from workbench import pipeline
from workbench.commands.options import (
    Calib,
    Count,
    Debug,
    Method,
    MethodName,
    Percentile,
    Rounding,
    RoundingName,
    TargetName,
    Weights,
    console,
    quant_config,
)
from workbench.errors import reported

EPILOG = """Examples:

  workbench export efficientnet_lite0 -o lite0.tflite

  workbench export my_net.py:build --calib random -o net.tflite
"""


def export_command(
    model: Annotated[str, typer.Argument(help="Model spec (a .mdla holds no int8 IR to export).")],
    out: Annotated[Path, typer.Option("-o", "--out", help="The .tflite file to write.")],
    weights: Weights = None,
    calib: Calib = "samples",
    count: Count = 6,
    method: Method = MethodName.percentile,
    percentile: Percentile = 99.99,
    rounding: Rounding = RoundingName.double,
    target: TargetName = "mdla3.5",
    debug: Debug = False,
) -> None:
    """Compile MODEL exactly as `compile` does and write the int8 graph as a .tflite file
    (the same graph the .mdla holds: LiteRT's reference kernels agree with it bit for bit)."""
    with reported(debug):
        pipeline.check_output(out, ".tflite")
        config = quant_config(method, percentile, rounding, target)
        compiled = pipeline.compile_model(
            model, str(weights) if weights else None, calib, count, config, target
        )
        mdla_runtime.export_tflite(compiled.qgraph, out)
        console().print(
            f"wrote {out} ({out.stat().st_size / 1024:.1f} KiB, {len(compiled.qgraph.ops)} ops)",
            markup=False,
        )
