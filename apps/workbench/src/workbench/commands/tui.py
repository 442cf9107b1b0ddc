"""`workbench tui` (and `workbench` alone): the Textual TUI."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from mdla_compile import CompileOptions
from mdla_ir.devices import NPU
from workbench.commands.binding import options
from workbench.commands.options import CompileFlags, Debug, Device, On
from workbench.errors import reported

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp

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
            with hangup_is_interrupt(app):
                app.run()
            if app.interrupted:  # the loop ended cleanly: now say so, exit 130
                raise KeyboardInterrupt
        finally:  # also after Ctrl-C (SIGINT), SIGHUP or SIGTERM: no temp dir or SSH left
            if app.interrupted:
                leave_alternate_screen()
            app.cleanup()


def leave_alternate_screen() -> None:
    """A signal that lands while Textual is entering application mode can end the app before
    its driver leaves the alternate screen (seen on a loaded machine: mouse reporting undone,
    the alternate screen not), which would leave the user's terminal on a blank screen. The
    escape goes where Textual's driver writes (stderr); leaving an alternate screen that was
    already left does nothing."""
    stream = sys.__stderr__
    if stream is not None:
        stream.write("\x1b[?1049l")
        stream.flush()


@contextmanager
def hangup_is_interrupt(app: WorkbenchApp) -> Iterator[None]:
    """SIGHUP (the terminal closed) and SIGTERM end the TUI as Ctrl-C does, through the
    cleanup, instead of killing it where it stands (their default leaves the temp dirs): the
    app exits through its event loop (`WorkbenchApp.interrupt`), whenever the signal comes."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        app.interrupt()

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
