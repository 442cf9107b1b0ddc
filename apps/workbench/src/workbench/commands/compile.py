"""`workbench compile`: model spec -> legalized, calibrated INT8 `.mdla` (and `.tflite`)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import mdla_quant
import mdla_runtime
from workbench import pipeline
from workbench.commands.options import (
    AdaRound,
    BiasCorrection,
    Calib,
    Count,
    Debug,
    Equalize,
    Method,
    MethodName,
    On,
    Percentile,
    Rounding,
    RoundingName,
    SkipRule,
    TargetName,
    Weights,
    console,
)
from workbench.errors import UNSUPPORTED, WorkbenchError, interrupt_guard, reported

EPILOG = """Examples:

  workbench compile efficientnet_lite0 --calib samples -o lite0.mdla

  workbench compile resnet18 --weights r18.pt --calib photos/ --method mse -o r18.mdla

  workbench compile my_net.py:build --calib random --tflite net.tflite -o net.mdla
"""


def compile_command(
    model: Annotated[
        str, typer.Argument(help="Model spec: torchvision name, efficientnet_lite0, file.py:fn.")
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="The .mdla file to write.")],
    weights: Weights = None,
    calib: Calib = "samples",
    count: Count = 6,
    method: Method = MethodName.percentile,
    percentile: Percentile = 99.99,
    rounding: Rounding = RoundingName.double,
    bias_correction: BiasCorrection = False,
    equalize: Equalize = False,
    adaround: AdaRound = 0,
    target: TargetName = "mdla3.5",
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
    debug: Debug = False,
) -> None:
    """Import, legalize, calibrate and quantize MODEL, then write one .mdla file.

    Prints a progress bar over calibration and a summary: ops, ops on mtk-mdla N/N (the
    device's own support query, --on), file size and the worst-layer SQNR.
    """
    with reported(debug), interrupt_guard() as interrupted:
        con = console()
        start = time.perf_counter()
        pipeline.check_output(out, ".mdla")
        if tflite is not None:
            pipeline.check_output(tflite, ".tflite")
        config = mdla_quant.QuantConfig(
            method=method.value,
            percentile=percentile,
            rounding=rounding.value,
            bias_correction=bias_correction,
            equalize=equalize,
            adaround=adaround,
            target=target,
        )
        source = pipeline.load_source(model, str(weights) if weights else None)
        device_graph = pipeline.legalize_graph(source.graph, target, config.device, skip_rule or [])
        calibration = pipeline.calibration_inputs(calib, source, count)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=con,
        ) as bar:
            task = bar.add_task("calibrating", total=len(calibration))
            layers = bar.add_task("adaround", total=None, visible=False)

            def layer(i: int, n: int, name: str) -> None:
                bar.update(
                    layers, completed=i, total=n, visible=True, description=f"adaround {name}"
                )

            compiled = pipeline.quantize_graph(
                source,
                device_graph,
                calibration,
                config,
                progress=lambda n, _s: bar.update(task, completed=n),
                layer_progress=layer,
            )
        counted: list[tuple[int, int]] = []

        def vet(blob: bytes) -> None:  # the device's own support query, before any write
            ok, total = pipeline.support_of_bytes(mdla_runtime.open_target(on), blob, config.device)
            counted.append((ok, total))
            if ok < total and not force:
                raise WorkbenchError(
                    f"`{model}` compiles, but {config.device} ({on}) runs {ok}/{total} of its "
                    "ops: nothing written (`workbench bisect` finds the first op that fails; "
                    "--force writes the .mdla anyway)",
                    UNSUPPORTED,
                )

        manifest = pipeline.save_manifest(compiled, out, tflite, before_write=interrupted, vet=vet)
        ((ok, total),) = counted
        if source.random_weights:  # said once the model compiled, not beside an error
            typer.echo(pipeline.random_weights_warning(model), err=True)
        worst = pipeline.worst_layers(compiled, 1)
        summary = Table(title=f"compiled {source.graph.name}", show_header=False, box=None)
        summary.add_row("ops", f"{len(source.graph.ops)} imported -> {len(manifest.operations)}")
        summary.add_row(f"ops on {config.device}", f"{ok}/{total} ({on})")
        summary.add_row(
            "calibration", f"{len(calibration)} x {calib}, {method.value}, {rounding.value}"
        )
        extras = [
            name
            for name, on_ in (
                ("equalized", equalize),
                (f"AdaRound {adaround} iters/layer", adaround),
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
        summary.add_row("time", f"{time.perf_counter() - start:.1f} s")
        con.print(summary)
        if ok < total:  # written because of --force; it still does not map
            typer.echo(
                f"error: {config.device} ({on}) runs {ok}/{total} ops of `{model}`; written "
                "because of --force",
                err=True,
            )
            raise typer.Exit(UNSUPPORTED)
