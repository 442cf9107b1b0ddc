"""`workbench witness`: prove the NPU ran: the APU runtime-PM counter around N runs."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from mdla_ir.devices import NPU
from workbench import pipeline, witnessing
from workbench.commands.options import Debug, Device, On, console
from workbench.commands.run import manifest_inputs
from workbench.errors import DEVICE, reported
from workbench.output import dumps, open_target, steps
from workbench.partition_report import npu_line, run_fields

EPILOG = """Examples:

  workbench witness lite0.mdla                        # emulator: its own fake APU counter

  workbench witness lite0.mdla --on ssh://root@phone --idle 4 --runs 20

  workbench witness lite0.mdla cat.jpg --on ssh://root@phone \
      --node /sys/devices/platform/190f0000.apu_top
"""


def witness_input(shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """The input when no IMAGE is named: seeded uniform [-1, 1] noise of the model's input
    shape. The witness asks whether the NPU worked, not what it saw, so it needs no sample
    photos (scikit-image) on the phone."""
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, tuple(int(d) for d in shape)).astype(np.float32)


def witness_command(
    manifest_path: Annotated[Path, typer.Argument(metavar="OUT.mdla", help="Compiled model.")],
    image: Annotated[
        str | None,
        typer.Argument(
            help="Input image, sample name or .npy (default: seeded noise: no photos needed)."
        ),
    ] = None,
    on: On = "emu",
    device: Device = NPU,
    idle: Annotated[float, typer.Option("--idle", min=0.0, help="Idle control, seconds.")] = 4.0,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Inferences in the run.")] = 10,
    node: Annotated[
        str | None,
        typer.Option(
            "--node",
            help="The APU device directory whose power/runtime_active_time to read (skips "
            "discovery; what the verdict asks for when it finds none).",
        ),
    ] = None,
    sysfs: Annotated[
        str, typer.Option("--sysfs", help="Where to discover the node (a sysfs root).")
    ] = "/sys",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    debug: Debug = False,
) -> None:
    """Read the APU's runtime_active_time, idle (the control), read, run N inferences, read:
    prints both deltas, runtime_status before/after and the verdict. Exits 4 unless the
    verdict is `witnessed`."""
    with reported(debug):
        con = console()
        manifest = pipeline.load_manifest(manifest_path)
        target = open_target(on)  # an SSH phone: its connect on stderr
        x = (
            manifest_inputs(manifest, [image])[0][1]
            if image
            else witness_input(manifest.inputs[0].model_shape)
        )
        with contextlib.ExitStack() as stack:
            fake = None
            if on == "emu" and node is None:
                fake = stack.enter_context(witnessing.emulator_counter())
            counter = witnessing.counter_for(target, fake, node, sysfs)
            if not as_json:
                con.print(f"counter: {counter.what}", markup=False)
                con.print(
                    f"idle control {idle:g} s, then {runs} run(s) on {device} ...", markup=False
                )
            with steps() as s, s.step(f"witness: idle {idle:g} s, then {runs} run(s)"):
                w = witnessing.witness_runs(
                    target,
                    counter,
                    lambda: target.run(manifest, [x], devices=(device,), repeat=runs),
                    idle,
                )
        if as_json:
            fields = ("verdict", "node", "idle_s", "control_ms", "run_ms")
            out = {k: getattr(w, k) for k in fields}
            out |= {"status_before": w.status_before, "status_after": w.status_after}
            out |= {"counter": counter.what, "runs": runs, "device": device}
            if w.run_result is not None:
                out["latency_ms"] = w.run_result.latency_stats()
                out |= run_fields(w.run_result)  # a partitioned model: which ran on the NPU
            typer.echo(dumps(out))
        else:
            con.print(str(w), markup=False)
        if w.run_result is not None and not as_json:
            lat = w.run_result.latency_ms
            con.print(f"latency: {lat[0]:.2f} ms median, {lat[1]:.2f} ms min", markup=False)
            if w.run_result.partitions:
                con.print(npu_line(w.run_result), markup=False)
        if not w.witnessed:
            raise typer.Exit(DEVICE)
