"""`workbench engine`: where the `mdla-engine` executable and the host emulator library are."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mdla_emu import build_emulator
from mdla_runtime.build import engine_path
from workbench.commands.options import Debug, console
from workbench.engine_build import build_engine
from workbench.errors import USAGE, WorkbenchError, reported

EPILOG = """Examples:

  workbench engine

  $(workbench engine --path) lite0.mdla --check --json

  $(workbench engine --path) --devices --lib $(workbench engine --emulator)

  workbench engine --build -o mdla-engine

  workbench engine --build --cc aarch64-linux-android30-clang -o mdla-engine   # for adb push
"""


def engine_command(
    path: Annotated[
        bool, typer.Option("--path", help="Print only the engine's path (for scripts).")
    ] = False,
    emulator: Annotated[
        bool, typer.Option("--emulator", help="Print only the host emulator library's path.")
    ] = False,
    build: Annotated[
        bool,
        typer.Option(
            "--build", help="Build mdla-engine into -o with --cc (a cross compiler for a phone)."
        ),
    ] = False,
    cc: Annotated[
        str | None, typer.Option("--cc", help="With --build: the C compiler ($CC, else cc).")
    ] = None,
    output: Annotated[
        Path, typer.Option("-o", "--output", help="With --build: the file to write.")
    ] = Path("mdla-engine"),
    debug: Debug = False,
) -> None:
    """Build (on first use, cached by content) and show `mdla-engine`, the C program that runs a
    .mdla through a Neuron adapter library, and `libneuron_emu.so`, the host emulator of that
    library; use them from a shell, a script or `adb push`. `--build` compiles the engine with
    any compiler (`--cc`, e.g. the NDK's aarch64-linux-android30-clang) into a file (`-o`)."""
    with reported(debug):
        if build:
            if path or emulator:
                raise WorkbenchError("--build writes -o; it takes no --path or --emulator", USAGE)
            built = build_engine(output, cc)
            typer.echo(str(built.path))
            typer.echo(f"built with {built.compiler} for {built.machine}", err=True)
            return
        if cc is not None:
            raise WorkbenchError("--cc is for --build", USAGE)
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
