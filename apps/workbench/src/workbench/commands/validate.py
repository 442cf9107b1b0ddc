"""`workbench validate`: FP32 vs INT8 (reference and device): top-1, logits, worst layers."""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

import mdla_compile
from mdla_compile import inputs as ins
from mdla_compile.images import SAMPLES, read_image
from workbench import validation
from workbench.commands.binding import options
from workbench.commands.options import CompileFlags, Debug, JsonOut, On, console
from workbench.documents import validation_doc
from workbench.errors import USAGE, WorkbenchError, reported
from workbench.output import json_output, open_target, steps
from workbench.progress import compile_progress
from workbench.sweep import fanout, shards
from workbench.sweep.pool import cores

EPILOG = """Examples:

  workbench validate efficientnet_lite0                   # sample photos, emulator

  workbench validate resnet18 --weights r18.pt --calib photos/ cat.jpg dog.jpg

  workbench validate efficientnet_lite0 --on ssh://u0_a123@phone:8022 --method mse

  workbench validate convnext_tiny --cpu LAYER_NORM,GELU   # NPU + CPU partitions

  workbench validate efficientnet_lite0 --dataset val/ --workers 2   # in shards, both cores
"""


@dataclass(frozen=True)
class ShardFlags:
    """A large evaluation in shards, as `sweep` runs its tasks."""

    dataset: Annotated[
        Path | None,
        typer.Option(
            "--dataset",
            metavar="DIR",
            help="Validate every input in DIR in shards, on local processes or --ray (the "
            "emulator; the same figures as giving DIR as IMAGES).",
        ),
    ] = None
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", min=1, help="--dataset: local processes (default: one per core)."
        ),
    ] = None
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="auto|ADDRESS",
            help="--dataset: the shards as tasks on a Ray cluster (needs mdla-workbench[ray]).",
        ),
    ] = None
    shard_size: Annotated[
        int | None,
        typer.Option(
            "--shard-size",
            min=1,
            help="--dataset: inputs per shard (default: a quarter of an even share per worker).",
        ),
    ] = None


def db(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.1f}"


@options()
def validate_command(
    model: Annotated[str, typer.Argument(help="Model spec (compiled here).")],
    images: Annotated[
        list[str] | None,
        typer.Argument(
            help="Images, .npy/.npz inputs or directories of them to compare on (default: "
            "sample photos); a model of several inputs takes .npz files, one array per input "
            "named after it (or arr_0, arr_1, ... in the inputs' order)."
        ),
    ] = None,
    *,
    flags: CompileFlags,
    shard: ShardFlags,
    on: On = "emu",
    as_json: JsonOut = False,
    debug: Debug = False,
) -> None:
    """Compile MODEL, then compare FP32 with the INT8 reference and with the device, per image
    and per output: top-1 agreement for a [1, K] classifier, per-pixel argmax agreement for a
    class map ([1, K, H, W] at the input's H x W), cosine/SQNR of every output (a detector's
    head maps get these alone), and the five worst layers. Takes compile's model specs, input
    options and --cpu (ops the NPU lacks on the phone's CPU, as `compile --cpu` places them)."""
    with reported(debug), json_output(as_json) as emit:
        files = _dataset(shard, images or [], on)  # refused before a minute of compiling
        with steps() as s:
            compiled = mdla_compile.compile(flags.options(model), on_event=compile_progress(s))
        if files is not None:
            result = _sharded(compiled, model, files, shard)
        else:
            result = _validate(compiled, model, images or [], on)
        _print(result, model, on)
        emit(validation_doc(result, model, on))


def _validate(
    compiled: mdla_compile.Compiled, model: str, images: list[str], on: str
) -> validation.Validation:
    inputs = _inputs(compiled, model, images)
    tgt = open_target(on)  # an SSH phone: its connect on stderr
    with (
        tempfile.TemporaryDirectory(prefix="workbench-validate-") as tmp,
        steps() as s,
        s.step(f"comparing FP32 and INT8 on {len(inputs)} input(s)"),
    ):
        manifest = compiled.save(Path(tmp) / "model.mdla", store_float=False)  # compiled has it
        return validation.validate(compiled, inputs, tgt, manifest)


def _dataset(flags: ShardFlags, images: list[str], on: str) -> list[Path] | None:
    """--dataset DIR's input files (None without it)."""
    if flags.dataset is None:
        return None
    if images or on != "emu":
        raise WorkbenchError(
            "--dataset DIR validates DIR's inputs on the emulator: drop the IMAGES arguments "
            "and --on (or validate them without --dataset)",
            USAGE,
        )
    return ins.input_files(flags.dataset)


def _sharded(
    compiled: mdla_compile.Compiled, model: str, files: list[Path], flags: ShardFlags
) -> validation.Validation:
    """--dataset DIR: the inputs in shards, validated on workers and merged."""
    workers = flags.workers or cores()
    size = flags.shard_size or max(1, math.ceil(len(files) / (4 * workers)))
    parts = shards.shards_of(files, size)
    blob = shards.shared_of(compiled, model)
    where = f"Ray ({flags.ray})" if flags.ray else f"{min(workers, len(parts))} process(es)"
    with steps() as s, s.step(f"{len(files)} input(s) in {len(parts)} shard(s) on {where}"):
        if flags.ray:
            done = fanout.map_ray(shards.run_shard, blob, parts, flags.ray)
        elif workers == 1:
            done = [shards.run_shard(blob, p) for p in parts]
        else:
            done = fanout.map_local(shards.run_shard, blob, parts, workers)
    return shards.merge(done)


def _inputs(
    compiled: mdla_compile.Compiled, model: str, images: list[str]
) -> list[tuple[str, Any]]:
    """(name, one array per model input) to compare on: `images` (files, directories), else
    the sample photos, else (a model that takes no photos) the calibration inputs."""
    source = compiled.source
    if images:
        prep = (lambda im: mdla_compile.prepare_image(source, im)) if source.takes_images else None
        keys = list(source.graph.inputs)
        return [
            (Path(n).name, ins.load_sample(n, source.input_shapes, prep, model, keys))
            for n in ins.expand(images)
        ]
    if not source.takes_images:
        return [(f"random {i}", list(xs)) for i, xs in enumerate(compiled.calibration)]
    return [(n, mdla_compile.prepare_image(source, read_image(n))) for n in SAMPLES]


def _print(v: validation.Validation, model: str, on: str) -> None:
    con = console()
    table = Table(title=f"{model}: FP32 vs INT8 (reference and {on})")
    device = v.device or on
    heads: tuple[str, ...] = ("FP32 top-1", "INT8 ref top-1", f"{device} top-1")
    if v.kind != validation.CLASSIFIER:
        what = "pixels agree" if v.kind == validation.CLASS_MAP else "cosine"
        heads = (f"INT8 ref {what}", f"{device} {what}")
    for col in ("input", *heads):
        table.add_column(col)
    for row in v.rows:
        if v.kind == validation.CLASSIFIER:
            keys = [k for k in ("fp32", "ref", "device") if k in row.top1]
            cells = [f"{row.top1[k][1]} {row.top1[k][2]:.2f}" for k in keys]
            marks = ["", *("" if row.top1[k][0] == row.top1["fp32"][0] else " ✗" for k in keys[1:])]
            table.add_row(row.name, *(c + m for c, m in zip(cells, marks, strict=True)))
        else:
            fmt = "{:.2%}" if v.kind == validation.CLASS_MAP else "{:.4f}"
            table.add_row(row.name, *(fmt.format(row.agree[k]) for k in row.agree))
    con.print(table)
    for line in validation.summary_lines(v):
        con.print(line, markup=False)
    con.print(f"latency on {on}: {v.latency_ms[0]:.2f} ms median, {v.latency_ms[1]:.2f} ms min")
    worst = Table(title="five worst layers (INT8 reference vs float)")
    for col in ("tensor", "op", "cosine", "SQNR dB"):
        worst.add_column(col)
    for t in v.worst:
        worst.add_row(t.name, f"{t.op} ({t.kind})", f"{t.cosine:.4f}", db(t.sqnr_db))
    con.print(worst)
