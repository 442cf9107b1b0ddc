"""`workbench validate`: FP32 vs INT8 (reference and device): top-1, logits, worst layers."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

import mdla_quant
import mdla_runtime
from workbench import images as imgs
from workbench import pipeline, validation
from workbench.commands.options import (
    Calib,
    Count,
    Debug,
    Method,
    MethodName,
    On,
    Percentile,
    Rounding,
    RoundingName,
    TargetName,
    Weights,
    console,
)
from workbench.errors import WorkbenchError, reported

EPILOG = """Examples:

  workbench validate efficientnet_lite0                   # sample photos, emulator

  workbench validate resnet18 --weights r18.pt --calib photos/ cat.jpg dog.jpg

  workbench validate efficientnet_lite0 --on ssh://u0_a123@phone:8022 --method mse
"""


def db(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.1f}"


def validate_command(
    model: Annotated[str, typer.Argument(help="Model spec (compiled here).")],
    images: Annotated[
        list[str] | None, typer.Argument(help="Images to compare on (default: sample photos).")
    ] = None,
    weights: Weights = None,
    calib: Calib = "samples",
    count: Count = 6,
    method: Method = MethodName.percentile,
    percentile: Percentile = 99.99,
    rounding: Rounding = RoundingName.double,
    target: TargetName = "mdla3.5",
    on: On = "emu",
    debug: Debug = False,
) -> None:
    """Compile MODEL, then compare FP32 with the INT8 reference and with the device: top-1
    agreement per image, logits cosine/SQNR and the five worst layers."""
    with reported(debug):
        config = mdla_quant.QuantConfig(method.value, percentile, rounding.value, target=target)
        compiled = pipeline.compile_model(
            model, str(weights) if weights else None, calib, count, config, target
        )
        source = compiled.source
        if source.preprocess is None:
            if images:
                raise WorkbenchError(f"`{model}` takes no images: validate it without IMAGE")
            inputs = [(f"random {i}", xs[0]) for i, xs in enumerate(compiled.calibration)]
        else:
            names = images or list(imgs.SAMPLES)
            inputs = [
                (
                    Path(n).name,
                    imgs.prepare(imgs.read_image(n), source.preprocess, source.image_size),
                )
                for n in names
            ]
        tgt = mdla_runtime.open_target(on)
        with tempfile.TemporaryDirectory(prefix="workbench-validate-") as tmp:
            manifest = pipeline.save_manifest(compiled, Path(tmp) / "model.mdla")
            result = validation.validate(compiled, inputs, tgt, manifest)
        _print(result, model, on)


def _print(v: validation.Validation, model: str, on: str) -> None:
    con = console()
    table = Table(title=f"{model}: FP32 vs INT8 (reference and {on})")
    for col in ("input", "FP32 top-1", "INT8 ref top-1", f"{v.device or on} top-1"):
        table.add_column(col)
    for row in v.rows:
        cells = [f"{row.top1[k][1]} {row.top1[k][2]:.2f}" for k in ("fp32", "ref", "device")]
        marks = [
            "",
            *("" if row.top1[k][0] == row.top1["fp32"][0] else " ✗" for k in ("ref", "device")),
        ]
        table.add_row(row.name, *(c + m for c, m in zip(cells, marks, strict=True)))
    con.print(table)
    for key, what in (("ref", "INT8 reference"), ("device", f"device ({v.device})")):
        agree = v.logits[key]
        con.print(
            f"{what}: top-1 agreement {v.agreement(key):.0%}, logits cosine {agree.cosine:.4f}, "
            f"SQNR {db(agree.sqnr_db)} dB",
            markup=False,
        )
    con.print(f"latency on {on}: {v.latency_ms[0]:.2f} ms median, {v.latency_ms[1]:.2f} ms min")
    worst = Table(title="five worst layers (INT8 reference vs float)")
    for col in ("tensor", "op", "cosine", "SQNR dB"):
        worst.add_column(col)
    for t in v.worst:
        worst.add_row(t.name, f"{t.op} ({t.kind})", f"{t.cosine:.4f}", db(t.sqnr_db))
    con.print(worst)
