"""`workbench tui` (and `workbench` alone): the Textual TUI."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from mdla_compile import CompileOptions
from mdla_ir.devices import NPU
from workbench.commands.binding import options
from workbench.commands.options import CompileFlags, Debug, Device, On
from workbench.errors import reported

EPILOG = """Examples:

  workbench                                 # empty Graph screen: type a model spec

  workbench tui lite0.mdla --on ssh://u0_a123@phone:8022

  workbench tui squeezenet1_1

  workbench tui my_net.py:Net --weights net_state.pt --input-shape 1,3,64,64 \\
      --preset imagenet --labels labels.txt       # the options `compile` takes
"""


@options(calib="auto", count=2)
def tui_command(
    model: Annotated[
        str | None, typer.Argument(help="A model spec or OUT.mdla to open.", show_default=False)
    ] = None,
    *,
    flags: CompileFlags,
    device: Device = NPU,
    on: On = "emu",
    debug: Debug = False,
) -> None:
    """Open the TUI: Graph, Bisect, Calibrate, Witness and Run screens (keyboard only; q quits).

    MODEL opens with the options `workbench compile` takes (weights, input shape, preset or
    mean/std, labels, --arg, --import, --cpu, calibration, quantizer, target); an OUT.mdla
    opens with what it records, and these options fill in what it does not (its weights)."""
    with reported(debug):
        chosen = replace(flags.options(model or ""), device=device)
    open_tui(model, chosen, on, debug)


def open_tui(
    model: str | None = None,
    chosen: CompileOptions | None = None,
    on: str = "emu",
    debug: bool = False,
) -> None:
    """Run the TUI on `model` with `chosen` (None: the TUI's defaults), until it quits."""
    with reported(debug):
        from workbench.tui.app import WorkbenchApp

        app = WorkbenchApp(model, on, chosen)
        try:
            app.run()
        finally:  # also after Ctrl-C (SIGINT): no temp dir or open SSH target left behind
            app.cleanup()
