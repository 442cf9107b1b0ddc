"""`workbench tui` (and `workbench` alone): the Textual TUI."""

from __future__ import annotations

from typing import Annotated

import typer

from workbench.commands.options import Debug, On
from workbench.errors import reported

EPILOG = """Examples:

  workbench                                 # empty Graph screen: type a model spec

  workbench tui lite0.mdla --on ssh://u0_a123@phone:8022

  workbench tui squeezenet1_1
"""


def tui_command(
    model: Annotated[
        str | None, typer.Argument(help="A model spec or OUT.mdla to open.", show_default=False)
    ] = None,
    on: On = "emu",
    debug: Debug = False,
) -> None:
    """Open the TUI: Graph, Bisect, Calibrate, Witness and Run screens (keyboard only; q quits)."""
    with reported(debug):
        from workbench.tui.app import WorkbenchApp

        app = WorkbenchApp(model, on)
        try:
            app.run()
        finally:  # also after Ctrl-C (SIGINT): no temp dir or open SSH target left behind
            app.cleanup()
