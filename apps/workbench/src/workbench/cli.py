"""The `workbench` command: one Typer app, one module per command (`workbench.commands`)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType


def _stop_at_once(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C while the modules below load (a second or so), or once the command has ended:
    nothing is being written, so the process ends at once, with the line and the exit code
    of any interrupted command."""
    os.write(2, b"error: interrupted\n")
    os._exit(130)


_ON_MAIN = threading.current_thread() is threading.main_thread()
_BEFORE = signal.signal(signal.SIGINT, _stop_at_once) if _ON_MAIN else None
# The heavy imports follow the handler (E402 is off for this file).
from importlib.metadata import version
from typing import Annotated

import typer
from typer.exceptions import TyperException

from mdla_runtime.interrupt import interrupted
from workbench.commands import (
    bisect,
    check,
    compile,
    devices,
    doctor,
    engine,
    export,
    inspect,
    run,
    sweep,
    tui,
    tune,
    validate,
    witness,
)
from workbench.errors import INTERRUPTED, interrupt_guard, plain

app = typer.Typer(
    name="workbench",
    help="Compile PyTorch CNNs to INT8 for the MediaTek MDLA and run them on a phone or the "
    "host emulator. Without a command: the TUI.",
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"workbench (mdla-workbench) {version('mdla-workbench')}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def entry(
    ctx: typer.Context,
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Compile PyTorch CNNs to INT8 for the MediaTek MDLA and run them on a phone or the
    host emulator. Without a command: the TUI."""
    if ctx.invoked_subcommand is None:
        tui.open_tui()


BUILD, RUN, SETUP = "Build a model", "Run a compiled model", "Set up a target"
COMMANDS = (  # name, module's command, panel, the one line `workbench --help` shows
    ("compile", compile.compile_command, BUILD, "Model spec -> INT8 .mdla (and .tflite)."),
    ("check", check.check_command, BUILD, "Which ops map to the device, why not, the fix."),
    ("validate", validate.validate_command, BUILD, "FP32 vs INT8 vs device, per image."),
    ("tune", tune.tune_command, BUILD, "A calibration setting against the previous one."),
    ("sweep", sweep.sweep_command, BUILD, "Methods x techniques, scored on held-out inputs."),
    ("bisect", bisect.bisect_command, BUILD, "The first op the device cannot run."),
    ("export", export.export_command, BUILD, "The int8 graph as a .tflite file."),
    ("run", run.run_command, RUN, "Run a .mdla: top-5, maps, boxes, saved outputs."),
    ("inspect", inspect.inspect_command, RUN, "What a .mdla holds (runs nothing)."),
    ("witness", witness.witness_command, RUN, "Prove the NPU ran it (APU busy time)."),
    ("tui", tui.tui_command, RUN, "The keyboard TUI (also: workbench alone)."),
    ("doctor", doctor.doctor_command, SETUP, "Check each step to a working target."),
    ("devices", devices.devices_command, SETUP, "The adapter library and its devices."),
    ("engine", engine.engine_command, SETUP, "Build or show mdla-engine and the emulator."),
)
for name, command, panel, line in COMMANDS:
    module = sys.modules[command.__module__]
    app.command(name, epilog=module.EPILOG, short_help=line, rich_help_panel=panel)(command)

try:  # `workbench probe` (issue 9) is its own module, written in parallel
    from workbench.commands.probe import probe
except ImportError:  # pragma: no cover - only while that module is absent
    pass
else:
    app.command("probe", short_help="Probe every Neuron op on a device.", rich_help_panel=SETUP)(
        probe
    )


if _ON_MAIN:  # imported, not run (a test, the TUI): the caller's own Ctrl-C handling again
    signal.signal(signal.SIGINT, _BEFORE or signal.default_int_handler)


def main() -> None:
    """The `workbench` script: Typer's own usage errors become one plain `error:` line too
    (Typer draws a box of them, in colour under CI=GITHUB_ACTIONS or FORCE_COLOR), and a
    Ctrl-C at any moment is `error: interrupted`, exit 130 (`mdla_runtime.interrupt`)."""
    try:
        with interrupt_guard():
            _main()
    finally:  # the interpreter's shutdown (threads, buffers) is no time for a traceback
        if _ON_MAIN:
            signal.signal(signal.SIGINT, _stop_at_once)


def _main() -> None:
    try:
        rc = app(standalone_mode=False)
    except TyperException as exc:  # Typer's (vendored) click usage errors derive from it
        message = getattr(exc, "format_message", None)
        if message is None:
            raise
        ctx = getattr(exc, "ctx", None)
        hint = f" (`{ctx.command_path} -h` for help)" if ctx is not None else ""
        sys.stderr.write(f"error: {plain(message())}{hint}\n")
        sys.exit(int(getattr(exc, "exit_code", 2)))
    except (typer.Abort, KeyboardInterrupt) as exc:  # click's Abort wraps a Ctrl-C in parsing
        if isinstance(exc, KeyboardInterrupt) or interrupted(exc):
            sys.stderr.write("error: interrupted\n")
            sys.exit(INTERRUPTED)
        sys.stderr.write("error: aborted\n")
        sys.exit(1)
    sys.exit(rc if isinstance(rc, int) else 0)
