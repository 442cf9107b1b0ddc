"""`workbench compile`: model spec -> legalized, calibrated INT8 `.mdla` (and `.tflite`)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

import mdla_runtime
from mdla_ir.devices import DEFAULT_TARGET
from mdla_runtime.export.writer import check_rounding
from workbench import contract as ct
from workbench import pipeline, placement
from workbench.commands.options import (
    AdaRound,
    BiasCorrection,
    Calib,
    Count,
    Debug,
    Equalize,
    ImportPath,
    ImportPathName,
    JsonOut,
    Method,
    MethodName,
    On,
    Percentile,
    Reconstruction,
    ReconstructionName,
    Rounding,
    RoundingName,
    SkipRule,
    TargetName,
    Weights,
    console,
    quant_config,
)
from workbench.errors import UNSUPPORTED, WorkbenchError, interrupt_guard, reported
from workbench.output import json_output, steps

EPILOG = """Examples:

  workbench compile efficientnet_lite0 --calib samples -o lite0.mdla

  workbench compile resnet18 --weights r18.pt --calib photos/ --method mse -o r18.mdla

  workbench compile my_net.py:build --calib random --tflite net.tflite -o net.mdla

  workbench compile my_net.py:Net --weights net_state.pt --input-shape 1,3,64,64 \
      --preset imagenet --labels labels.txt --calib photos/ --count 2 -o net.mdla

  workbench compile net.pt2 --preset zero1 --calib arrays/ -o net.mdla    # .pt, .ts, .pt2
"""


def compile_command(
    model: Annotated[
        str, typer.Argument(help="Model spec: torchvision name, efficientnet_lite0, file.py:fn.")
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="The .mdla file to write.")],
    weights: Weights = None,
    importer: ImportPath = ImportPathName.fx,
    calib: Calib = "samples",
    count: Count = 6,
    method: Method = MethodName.percentile,
    percentile: Percentile = 99.99,
    rounding: Rounding = RoundingName.double,
    bias_correction: BiasCorrection = False,
    equalize: Equalize = False,
    adaround: AdaRound = 0,
    reconstruction: Reconstruction = ReconstructionName.layer,
    target: TargetName = DEFAULT_TARGET,
    tflite: Annotated[
        Path | None, typer.Option("--tflite", help="Also export the int8 graph as .tflite.")
    ] = None,
    skip_rule: SkipRule = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write the .mdla even when the device does not run every op (exit 3 still).",
        ),
    ] = False,
    on: On = "emu",
    arg: ct.ArgOpt = None,
    input_shape: ct.InputShape = None,
    preset: ct.PresetOpt = None,
    mean: ct.Mean = None,
    std: ct.Std = None,
    channels: ct.ChannelsOpt = None,
    resize: ct.Resize = None,
    crop: ct.Crop = None,
    labels: ct.LabelsOpt = None,
    cpu: placement.Cpu = None,
    as_json: JsonOut = False,
    debug: Debug = False,
) -> None:
    """Import, legalize, calibrate and quantize MODEL, then write one .mdla file.

    MODEL: a torchvision name, efficientnet_lite0, `file.py:name` (a function, class or
    instance; `file.py:build(width=0.5)` or --arg for arguments), or a model file (.pt saved
    with torch.save(model), TorchScript, torch.export .pt2). The input options (--input-shape,
    --preset or --mean/--std, --channels, --resize/--crop, --labels) are stored in the .mdla.

    Prints a progress bar over calibration and a summary: ops, ops on mtk-mdla N/N (the
    device's own support query, --on), file size and the worst-layer SQNR.
    """
    with reported(debug), interrupt_guard() as interrupted, json_output(as_json) as emit:
        con = console()
        start = time.perf_counter()
        pipeline.check_output(out, ".mdla")
        if tflite is not None:
            pipeline.check_output(tflite, ".tflite")
            check_rounding(rounding.value, model)
        config = quant_config(
            method,
            percentile,
            rounding,
            target,
            bias_correction=bias_correction,
            equalize=equalize,
            adaround=adaround,
            reconstruction=reconstruction,
        )
        contract = ct.contract_from(input_shape, preset, mean, std, channels, resize, crop, labels)
        with steps() as s:
            with s.step(f"importing {model}"):
                source = pipeline.load_source(
                    model, str(weights) if weights else None, contract, arg or [], importer.value
                )
            for note in source.notes:
                typer.echo(note, err=True)
            with s.step("legalizing"):
                device_graph = placement.device_graph(
                    source.graph, target, config.device, cpu, skip_rule or []
                )
            calibration = pipeline.calibration_inputs(calib, source, count)
            tick = s.bar("calibrating", total=len(calibration))
            compiled = pipeline.quantize_graph(
                source,
                device_graph,
                calibration,
                config,
                progress=lambda n, _s: tick(n),
                layer_progress=s.layers("adaround"),
            )
        counted: list[tuple[int, int]] = []

        def vet(blob: bytes) -> None:  # the device's own support query, before any write
            # partitions: the ops of the NPU partitions, each partition asked as its own model
            ok, total = pipeline.support_of_bytes(mdla_runtime.open_target(on), blob, config.device)
            counted.append((ok, total))
            if ok < total and not force:
                raise WorkbenchError(
                    f"`{model}` compiles, but {config.device} ({on}) runs {ok}/{total} of its "
                    "ops: nothing written (`workbench bisect` finds the first op that fails; "
                    "--force writes the .mdla anyway)",
                    UNSUPPORTED,
                )

        with steps() as s, s.step(f"checking support ({on}) and saving"):
            manifest = pipeline.save_manifest(
                compiled, out, tflite, before_write=interrupted, vet=vet
            )
        ((ok, total),) = counted
        if source.random_weights:  # said once the model compiled, not beside an error
            typer.echo(pipeline.random_weights_warning(model), err=True)
        worst = pipeline.worst_layers(compiled, 1)
        summary = Table(title=f"compiled {source.graph.name}", show_header=False, box=None)
        summary.add_row("ops", f"{len(source.graph.ops)} imported -> {len(manifest.operations)}")
        on_npu = f"{ok}/{total} ({on})"
        if cpu:
            on_npu += f", {len(manifest.operations) - total} on cpu"
        summary.add_row(f"ops on {config.device}", on_npu)
        if cpu:
            summary.add_row("cosine vs FP32", f"{placement.output_cosine(compiled):.5f}")
        summary.add_row(
            "calibration", f"{len(calibration)} x {calib}, {method.value}, {rounding.value}"
        )
        extras = [
            name
            for name, on_ in (
                ("equalized", equalize),
                (f"AdaRound {adaround} iters/layer", adaround),
                ("block reconstruction", config.reconstruction == "block"),
                ("bias-corrected", bias_correction),
            )
            if on_
        ]
        if extras:
            summary.add_row("weights", ", ".join(extras))
        summary.add_row("size", f"{out.stat().st_size / 1024:.1f} KiB  {out}")
        if tflite is not None:
            summary.add_row("tflite", f"{tflite.stat().st_size / 1024:.1f} KiB  {tflite}")
        if worst:
            w = worst[0]
            db = "inf" if math.isinf(w.sqnr_db) else f"{w.sqnr_db:.1f}"
            summary.add_row("worst layer", f"{w.op} ({w.kind}): SQNR {db} dB")
        seconds = time.perf_counter() - start
        summary.add_row("time", f"{seconds:.1f} s")
        con.print(summary)
        emit(
            {
                "model": model,
                "graph": source.graph.name,
                "out": str(out),
                "bytes": out.stat().st_size,
                "tflite": str(tflite) if tflite is not None else None,
                "ops": {"imported": len(source.graph.ops), "manifest": len(manifest.operations)},
                "device": config.device,
                "on": on,
                "supported": {"ok": ok, "total": total},
                "calibration": {
                    "source": calib,
                    "count": len(calibration),
                    "method": method.value,
                    "percentile": percentile if method.value == "percentile" else None,
                    "rounding": rounding.value,
                    "bias_correction": bias_correction,
                    "equalize": equalize,
                    "adaround": adaround,
                    "reconstruction": config.reconstruction,
                },
                "random_weights": source.random_weights,
                "worst_layer": (
                    {"op": worst[0].op, "kind": worst[0].kind, "sqnr_db": worst[0].sqnr_db}
                    if worst
                    else None
                ),
                "seconds": round(seconds, 3),
            }
        )
        if ok < total and not cpu:  # written because of --force; it still does not map
            typer.echo(
                f"error: {config.device} ({on}) runs {ok}/{total} ops of `{model}`; written "
                "because of --force",
                err=True,
            )
            raise typer.Exit(UNSUPPORTED)
