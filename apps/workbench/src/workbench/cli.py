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


app.command("compile", epilog=compile.EPILOG)(compile.compile_command)
app.command("check", epilog=check.EPILOG)(check.check_command)
app.command("run", epilog=run.EPILOG)(run.run_command)
app.command("bisect", epilog=bisect.EPILOG)(bisect.bisect_command)
app.command("validate", epilog=validate.EPILOG)(validate.validate_command)
app.command("witness", epilog=witness.EPILOG)(witness.witness_command)
app.command("devices", epilog=devices.EPILOG)(devices.devices_command)
app.command("doctor", epilog=doctor.EPILOG)(doctor.doctor_command)
app.command("engine", epilog=engine.EPILOG)(engine.engine_command)
app.command("export", epilog=export.EPILOG)(export.export_command)
app.command("inspect", epilog=inspect.EPILOG)(inspect.inspect_command)
app.command("tui", epilog=tui.EPILOG)(tui.tui_command)
app.command("tune", epilog=tune.EPILOG)(tune.tune_command)

try:  # `workbench probe` (issue 9) is its own module, written in parallel
    from workbench.commands.probe import probe
except ImportError:  # pragma: no cover - only while that module is absent
    pass
else:
    app.command("probe")(probe)


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
