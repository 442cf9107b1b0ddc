"""`workbench engine`: where the `mdla-engine` executable and the host emulator library are."""

from __future__ import annotations

from typing import Annotated

import typer

from mdla_runtime.build import engine_path
from mdla_runtime.emu.emulator import build_emulator
from workbench.commands.options import Debug, console
from workbench.errors import reported

EPILOG = """Examples:

  workbench engine

  $(workbench engine --path) lite0.mdla --check --json

  $(workbench engine --path) --devices --lib $(workbench engine --emulator)
"""


def engine_command(
    path: Annotated[
        bool, typer.Option("--path", help="Print only the engine's path (for scripts).")
    ] = False,
    emulator: Annotated[
        bool, typer.Option("--emulator", help="Print only the host emulator library's path.")
    ] = False,
    debug: Debug = False,
) -> None:
    """Build (on first use, cached by content) and show `mdla-engine`, the C program that runs a
    .mdla through a Neuron adapter library, and `libneuron_emu.so`, the host emulator of that
    library; use them from a shell, a script or `adb push` (for a phone, cross-build it: see
    packages/mdla-runtime/README.md)."""
    with reported(debug):
        engine = engine_path()
        if path:
            typer.echo(str(engine))
            return
        lib = build_emulator()
        if emulator:
            typer.echo(str(lib))
            return
    con = console()
    con.print(f"engine:   {engine}", markup=False)
    con.print(f"emulator: {lib}", markup=False)
    con.print(f"try:      {engine} --devices --lib {lib}", markup=False)
    con.print(f"          {engine} --help", markup=False)
