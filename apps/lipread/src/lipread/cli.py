"""The `lipread` CLI: `lipread VIDEO [options]` reads a clip; `lipread calibrate DIR` compiles;
`lipread convert CKPT OUT.npz` makes a torch-free checkpoint.

`lipread VIDEO` is shorthand for `lipread read VIDEO` (see `route`). Errors are one line on
stderr with STYLE.md's exit codes: 1 bad input or model, 2 usage, 3 unsupported, 4 device.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.metadata import version
from typing import Annotated

import typer

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
    """Console-script entry point."""
    app(route(sys.argv[1:]), prog_name="lipread")


def _register() -> None:
    from lipread.commands import calibrate, convert, features, read

    app.command("read")(read.read)
    app.command("calibrate")(calibrate.calibrate)
    app.command("convert")(convert.convert)
    app.command("features")(features.features)


_register()
