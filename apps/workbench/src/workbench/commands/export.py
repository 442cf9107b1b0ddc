"""`workbench export`: compile a model and write its int8 graph as .tflite (for LiteRT)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import mdla_runtime
from mdla_ir.devices import DEFAULT_TARGET
from mdla_runtime.export.writer import check_rounding
from workbench import contract as ct
from workbench import pipeline, placement
from workbench.commands.options import (
    Calib,
    Count,
    Debug,
    ImportPath,
    ImportPathName,
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
from workbench.errors import USAGE, WorkbenchError, reported

EPILOG = """Examples:

  workbench export efficientnet_lite0 -o lite0.tflite

  workbench export my_net.py:build --calib random -o net.tflite

  workbench export convnext_tiny --cpu LAYER_NORM,GELU,FULLY_CONNECTED,TRANSPOSE -o cx.tflite
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
    target: TargetName = DEFAULT_TARGET,
    cpu: placement.Cpu = None,
    importer: ImportPath = ImportPathName.fx,
    arg: ct.ArgOpt = None,
    input_shape: ct.InputShape = None,
    preset: ct.PresetOpt = None,
    mean: ct.Mean = None,
    std: ct.Std = None,
    channels: ct.ChannelsOpt = None,
    resize: ct.Resize = None,
    crop: ct.Crop = None,
    debug: Debug = False,
) -> None:
    """Compile MODEL exactly as `compile` does and write the int8 graph as a .tflite file
    (the same graph the .mdla holds: LiteRT's reference kernels agree with it bit for bit).

    With --cpu, the placement table is printed as by `compile`, and the whole partitioned
    model is one .tflite graph (LiteRT places it itself): the CPU partitions' TRANSPOSE, GELU
    (a lookup of the .mdla's own table), LAYER_NORM (float32 builtins) and ARGMAX as TFLite
    builtins. An op with no .tflite form: exit 3, naming it. The input options (--input-shape,
    --preset or --mean/--std, --channels, --resize/--crop) and --arg load and calibrate the
    model as `compile` does with them; the .tflite takes the input shape they give."""
    with reported(debug):
        if pipeline.is_manifest(model):
            raise WorkbenchError(
                f"`{model}` is a compiled manifest: a .mdla holds Neuron operations, not the int8 "
                "graph; export the model spec with the same options (and --cpu), or write both "
                "at once: `workbench compile MODEL --tflite OUT.tflite -o OUT.mdla`",
                USAGE,
            )
        pipeline.check_output(out, ".tflite")
        check_rounding(rounding.value, model)
        config = quant_config(method, percentile, rounding, target)
        contract = ct.contract_from(input_shape, preset, mean, std, channels, resize, crop)
        source = pipeline.load_source(
            model, str(weights) if weights else None, contract, arg or [], importer.value
        )
        for note in source.notes:
            typer.echo(note, err=True)
        device_graph = placement.device_graph(source.graph, target, config.device, cpu, [])
        calibration = pipeline.calibration_inputs(calib, source, count)
        compiled = pipeline.quantize_graph(source, device_graph, calibration, config)
        mdla_runtime.export_tflite(compiled.qgraph, out)
        console().print(
            f"wrote {out} ({out.stat().st_size / 1024:.1f} KiB, {len(compiled.qgraph.ops)} ops)",
            markup=False,
        )
