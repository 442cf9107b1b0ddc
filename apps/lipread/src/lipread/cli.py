"""The `lipread` CLI: `lipread VIDEO [options]` reads a clip; `lipread calibrate DIR` compiles;
`lipread convert CKPT OUT.npz` makes a torch-free checkpoint.

`lipread VIDEO` is shorthand for `lipread read VIDEO` (see `route`). Errors are one line on
stderr with STYLE.md's exit codes: 1 bad input or model, 2 usage, 3 unsupported, 4 device.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType


def _stop_at_once(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C while the modules below load, or once the command has ended: nothing is being
    written, so the process ends at once, with the line and the exit code of any
    interrupted command."""
    os.write(2, b"lipread: error: interrupted\n")
    os._exit(130)


_ON_MAIN = threading.current_thread() is threading.main_thread()
_BEFORE = signal.signal(signal.SIGINT, _stop_at_once) if _ON_MAIN else None
# The heavy imports follow the handler (E402 is off for this file).
from collections.abc import Sequence
from importlib.metadata import version
from typing import Annotated

import typer
from typer.exceptions import TyperException

from lipread.commands.options import plain
from mdla_runtime.interrupt import INTERRUPTED, interrupt_guard, interrupted

HELP = """A silent mouth video in, the sentence out; LipNet's front-end INT8 on the MDLA.

Usage: lipread VIDEO [OPTIONS] reads a clip; it is lipread read VIDEO [OPTIONS] (see lipread read --help).

Without --weights the model is the shipped SYNTHETIC DEMO: trained on rendered cartoon mouths, it reads the synthetic samples, not real faces. For real video pass a LipNet-PyTorch checkpoint with --weights.
"""  # noqa: E501  (one line a paragraph: the help formatter keeps line breaks)

app = typer.Typer(
    name="lipread",
    help=HELP,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
)
COMMANDS = ("read", "calibrate", "convert", "features")


def route(argv: Sequence[str]) -> list[str]:
    """`lipread VIDEO ...` -> `lipread read VIDEO ...`; commands and --help pass unchanged."""
    args = list(argv)
    if args and args[0] not in COMMANDS and args[0] not in ("--help", "-h", "--version"):
        return ["read", *args]
    return args


def _version(value: bool) -> None:
    if value:
        typer.echo(f"lipread (mdla-lipread) {version('mdla-lipread')}")
        raise typer.Exit()


@app.callback()
def _entry(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    pass


def main() -> None:
    """Console-script entry point: errors, usage errors included, are one `lipread: error:`
    line; a Ctrl-C at any moment is `lipread: error: interrupted`, exit 130."""
    try:
        with interrupt_guard("lipread: error: interrupted"):
            sys.exit(_main(route(sys.argv[1:])))
    finally:  # the interpreter's shutdown (threads, buffers) is no time for a traceback
        if _ON_MAIN:
            signal.signal(signal.SIGINT, _stop_at_once)


def _main(args: list[str]) -> int:
    try:
        rc = app(args, prog_name="lipread", standalone_mode=False)
    except TyperException as exc:  # click's usage errors (Typer's vendored copy)
        message = getattr(exc, "format_message", None)
        if message is None:
            raise
        ctx = getattr(exc, "ctx", None)
        hint = f" (`{ctx.command_path} -h` for help)" if ctx is not None else ""
        if message():  # none when `lipread` alone has printed its help
            sys.stderr.write(f"lipread: error: {plain(message())}{hint}\n")
        return int(getattr(exc, "exit_code", 2))
    except (typer.Abort, KeyboardInterrupt) as exc:  # click's Abort wraps a Ctrl-C in parsing
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) or interrupted(exc) else "aborted"
        sys.stderr.write(f"lipread: error: {why}\n")
        return INTERRUPTED if why == "interrupted" else 1
    return rc if isinstance(rc, int) else 0


def _register() -> None:
    from lipread.commands import calibrate, convert, features, read

    app.command("read")(read.read)
    app.command("calibrate")(calibrate.calibrate)
    app.command("convert")(convert.convert)
    app.command("features")(features.features)


_register()
if _ON_MAIN:  # imported, not run (a test): the caller's own Ctrl-C handling again
    signal.signal(signal.SIGINT, _BEFORE or signal.default_int_handler)
