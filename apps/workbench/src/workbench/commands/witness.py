"""`workbench witness`: prove the NPU ran: the APU runtime-PM counter around N runs."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer

import mdla_runtime
from workbench import pipeline, witnessing
from workbench.commands.options import Debug, Device, On, console
from workbench.commands.run import manifest_inputs
from workbench.errors import DEVICE, reported

EPILOG = """Examples:

  workbench witness lite0.mdla                        # emulator: its own fake APU counter

  workbench witness lite0.mdla --on ssh://root@phone --idle 4 --runs 20
"""


def witness_command(
    manifest_path: Annotated[Path, typer.Argument(metavar="OUT.mdla", help="Compiled model.")],
    on: On = "emu",
    device: Device = "mtk-mdla",
    idle: Annotated[float, typer.Option("--idle", min=0.0, help="Idle control, seconds.")] = 4.0,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Inferences in the run.")] = 10,
    debug: Debug = False,
) -> None:
    """Read the APU's runtime_active_time, idle (the control), read, run N inferences, read:
    prints both deltas, runtime_status before/after and the verdict. Exits 4 unless the
    verdict is `witnessed`."""
    with reported(debug):
        con = console()
        manifest = pipeline.load_manifest(manifest_path)
        target = mdla_runtime.open_target(on)
        (_, x), *_ = manifest_inputs(manifest, [])
        with contextlib.ExitStack() as stack:
            node = stack.enter_context(witnessing.emulator_counter()) if on == "emu" else None
            counter = witnessing.counter_for(target, node)
            con.print(f"counter: {counter.what}", markup=False)
            con.print(f"idle control {idle:g} s, then {runs} run(s) on {device} ...", markup=False)
            w = witnessing.witness_runs(
                target,
                counter,
                lambda: target.run(manifest, [x], devices=(device,), repeat=runs),
                idle,
            )
        con.print(str(w), markup=False)
        if w.run_result is not None:
            lat = w.run_result.latency_ms
            con.print(f"latency: {lat[0]:.2f} ms median, {lat[1]:.2f} ms min", markup=False)
        if not w.witnessed:
            raise typer.Exit(DEVICE)
