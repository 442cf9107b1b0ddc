"""`workbench compile`: model spec -> legalized, calibrated INT8 `.mdla` (and `.tflite`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

import mdla_compile
import mdla_runtime
from mdla_compile.calibration import SOURCES
from mdla_compile.inputs import input_files
from mdla_runtime.export.writer import check_rounding
from workbench import held_out as held_out_module
from workbench.commands.binding import options
from workbench.commands.options import CompileFlags, Debug, JsonOut, On, console
from workbench.errors import UNSUPPORTED, WorkbenchError, interrupt_guard, reported
from workbench.output import json_output, steps
from workbench.progress import compile_progress

EPILOG = """Examples:

  workbench compile efficientnet_lite0 --calib samples -o lite0.mdla

  workbench compile resnet18 --weights r18.pt --calib photos/ --method mse -o r18.mdla

  workbench compile my_net.py:build --calib random --tflite net.tflite -o net.mdla

  workbench compile my_net.py:Net --weights net_state.pt --input-shape 1,3,64,64 \
      --preset imagenet --labels labels.txt --calib photos/ --count 2 -o net.mdla

  workbench compile net.pt2 --preset zero1 --calib arrays/ -o net.mdla    # .pt, .ts, .pt2
"""


@options()
def compile_command(
    model: Annotated[
        str, typer.Argument(help="Model spec: torchvision name, efficientnet_lite0, file.py:fn.")
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="The .mdla file to write.")],
    flags: CompileFlags,
    tflite: Annotated[
        Path | None, typer.Option("--tflite", help="Also export the int8 graph as .tflite.")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write the .mdla even when the device does not run every op (exit 3 still).",
        ),
    ] = False,
    held_out: Annotated[
        int | None,
        typer.Option(
            "--held-out",
            min=0,
            help="Score INT8 against FP32 on this many inputs of --calib after the --count "
            f"that calibrate (default: up to {held_out_module.AUTO} when there are; 0: none).",
        ),
    ] = None,
    on: On = "emu",
    as_json: JsonOut = False,
    debug: Debug = False,
) -> None:
    """Import, legalize, calibrate and quantize MODEL, then write one .mdla file.

    MODEL: a torchvision name, efficientnet_lite0, `file.py:name` (a function, class or
    instance; `file.py:build(width=0.5)` or --arg for arguments), or a model file (.pt saved
    with torch.save(model), TorchScript, torch.export .pt2). The input options (--input-shape,
    --preset or --mean/--std, --channels, --resize/--crop, --labels) are stored in the .mdla.

    Prints a progress bar over calibration and a summary: ops, ops on mtk-mdla N/N (the
    device's own support query, --on), file size, the worst-layer SQNR and the agreement with
    FP32 on held-out inputs (the inputs of --calib after the --count that calibrate), with
    what to try when it is below 99%.
    """
    with reported(debug), interrupt_guard() as interrupted, json_output(as_json) as emit:
        start = time.perf_counter()
        mdla_compile.check_output(out, ".mdla")
        if tflite is not None:
            mdla_compile.check_output(tflite, ".tflite")
            check_rounding(flags.quant.rounding.value, model)
        opts = flags.options(model)
        if isinstance(opts.calib, str) and opts.calib != "auto":  # a usage error before work
            held_out_module.check_wanted(opts.calib, opts.count, held_out)
        note = calibration_note(opts.calib, opts.count)
        if note:
            typer.echo(note, err=True)
        with steps() as s:
            compiled = mdla_compile.compile(opts, on_event=compile_progress(s))
        counted: list[tuple[int, int]] = []
        vet = _support_vet(model, on, opts.device, force, counted)
        with steps() as s, s.step(f"checking support ({on}) and saving"):
            compiled.save(out, tflite, before_write=interrupted, vet=vet)
        if compiled.source.random_weights:  # said once the model compiled, not beside an error
            typer.echo(mdla_compile.random_weights_warning(model), err=True)
        report = compiled.report(on, counted[0])
        scored = _score_held_out(compiled, opts.calib, opts.count, held_out)
        seconds = time.perf_counter() - start
        _print(report, seconds, scored)
        emit({**report.as_dict(), "held_out": _held_out_doc(scored), "seconds": round(seconds, 3)})
        random = compiled.source.random_weights  # its agreement means nothing to improve
        advice = scored and not random and held_out_module.hint(scored, compiled.config)
        if advice:
            typer.echo(f"note: {advice}", err=True)
        ok, total = counted[0]
        if ok < total and not opts.cpu:  # written because of --force; it still does not map
            typer.echo(
                f"error: {opts.device} ({on}) runs {ok}/{total} ops of `{model}`; written "
                "because of --force",
                err=True,
            )
            raise typer.Exit(UNSUPPORTED)


def calibration_note(calib: object, count: int) -> str | None:
    """The line saying a --calib folder holds more inputs than --count takes (the first
    `count` by name are used), and how to use them all; None otherwise."""
    if not isinstance(calib, str) or calib in SOURCES or not Path(calib).is_dir():
        return None
    found = len(input_files(calib))  # an empty folder fails here, before the import
    if found <= count:
        return None
    return (
        f"calibrating on the first {count} of the {found} inputs in {calib} (by name); "
        f"--count {found} uses them all"
    )


def _support_vet(
    model: str, on: str, device: str, force: bool, counted: list[tuple[int, int]]
) -> mdla_compile.output.Vet:
    """`save`'s vet: the device's own support query of the bytes about to be written (the
    ops of the NPU partitions, each partition asked as its own model); unless `force`, a
    model the device does not run whole is refused before anything is written (exit 3)."""

    def vet(blob: bytes) -> None:
        ok, total = mdla_compile.support_of_bytes(mdla_runtime.open_target(on), blob, device)
        counted.append((ok, total))
        if ok < total and not force:
            raise WorkbenchError(
                f"`{model}` compiles, but {device} ({on}) runs {ok}/{total} of its "
                "ops: nothing written (`workbench bisect` finds the first op that fails; "
                "--force writes the .mdla anyway)",
                UNSUPPORTED,
            )

    return vet


def _score_held_out(
    compiled: mdla_compile.Compiled, calib: object, count: int, wanted: int | None
) -> held_out_module.Measured | None:
    """The held-out agreement (None when there are no spare inputs or --held-out 0)."""
    if not isinstance(calib, str):
        return None
    held = held_out_module.held_out_inputs(compiled, calib, count, wanted)
    if not held:
        return None
    try:
        with steps() as s, s.step(f"scoring INT8 against FP32 on {len(held)} held-out inputs"):
            return held_out_module.measure(compiled, held)
    except mdla_compile.CompileError as exc:  # the .mdla is written: scoring only advises
        typer.echo(
            f"note: held-out agreement not measured: {exc} (--held-out 0 skips it)", err=True
        )
        return None


def _held_out_doc(scored: held_out_module.Measured | None) -> dict[str, object] | None:
    if scored is None:
        return None
    a = scored.agreement
    return {
        "inputs": scored.count,
        "kind": scored.kind,
        "agreement": scored.share(),
        "top1_same": None if a is None else a.same,
        "ci95": None if a is None else list(a.interval),
        "cosine": scored.cosine,
        "text": scored.text(),
    }


def _print(
    report: mdla_compile.Report, seconds: float, scored: held_out_module.Measured | None
) -> None:
    summary = Table(title=f"compiled {report.graph}", show_header=False, box=None)
    for name, value in report.rows():
        summary.add_row(name, value)
    held = "not measured (no inputs after --count)"
    if scored is not None:
        held = scored.text() + ("" if scored.agreement else f" on {scored.count} inputs")
    summary.add_row("held out", held)
    summary.add_row("time", f"{seconds:.1f} s")
    console().print(summary)
