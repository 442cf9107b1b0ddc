"""`workbench probe --on TARGET`: measure a device's op-support matrix and int8 arithmetic, and
write it as a target data file the compiler uses (`--target path`).

For every op and variant in `workbench.probe.catalogue()` and every named device: does
getSupportedOperationsForDevices say yes (S), do createForDevices + finish succeed (C), does an
execution run (R), is the output bit-exact to the int8 reference, and how long it took (µs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from mdla_runtime import open_target
from workbench.errors import DEVICE, USAGE, WorkbenchError, reported
from workbench.output import dumps, steps
from workbench.probe import Cell, Matrix, ProbeResult, catalogue, run_probes, target_info
from workbench.probe import write_target as write_target_file

LEGEND = (
    "S supported (getSupportedOperationsForDevices) · C compiles (createForDevices + finish) · "
    "R runs · exact: bit-exact to mdla_quant.run_int8 (n/a: no reference) · µs median latency"
)


def cell_text(cell: Cell | None) -> str:
    """One matrix cell: `SCR exact 41µs`, `--- UNMAPPABLE`, `SCR 3 differ (max 1) 40µs`."""
    if cell is None:
        return ""

    def flag(v: bool | None, letter: str) -> str:
        return letter if v else "?" if v is None else "-"

    head = flag(cell.supported, "S") + flag(cell.compiles, "C") + flag(cell.runs, "R")
    if not cell.runs:
        return f"{head} {cell.error}".rstrip()
    exact = {True: "exact", None: "n/a"}.get(cell.exact)
    if exact is None:
        exact = f"{cell.mismatches} differ (max {cell.max_diff})"
    us = (
        ""
        if cell.latency_us is None
        else f" {cell.latency_us:.{1 if cell.latency_us < 10 else 0}f}µs"
    )
    note = f" [{cell.error}]" if cell.error else ""
    return f"{head} {exact}{us}{note}"


def matrix_table(matrix: Matrix) -> Table:
    table = Table(
        title=f"{matrix.target}: Neuron {matrix.version}, {matrix.date}",
        caption=LEGEND,
        caption_justify="left",
    )
    table.add_column("op", style="bold")
    table.add_column("variant")
    for dev in matrix.devices:
        table.add_column(dev)
    for r in matrix.results:
        cells = [cell_text(r.cells.get(d)) for d in matrix.devices]
        if r.skipped:
            cells = [r.skipped.split(":")[0]] * len(matrix.devices)
        table.add_row(r.probe.op, r.probe.variant, *cells)
    return table


def _device_list(devices: str) -> list[str]:
    names = [d.strip() for d in devices.split(",") if d.strip()]
    if not names or len(set(names)) != len(names):
        raise WorkbenchError(
            f"--devices {devices!r}: name each device once, comma separated", USAGE
        )
    return names


def probe(
    on: Annotated[
        str,
        typer.Option(
            "--on", help="emu, lib:PATH (PATH: a libneuron_adapter.so) or ssh://user@host"
        ),
    ] = "emu",
    devices: Annotated[str, typer.Option(help="Devices to probe, comma separated.")] = (
        "mtk-mdla,mtk-gpu,mtk-dsp"
    ),
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the target data file here.")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="Print the matrix as JSON.")] = False,
    only: Annotated[
        list[str] | None, typer.Option(help="Probe only this op (or OP/variant); repeatable.")
    ] = None,
    repeat: Annotated[int, typer.Option(min=1, help="Executions per probe (median).")] = 3,
    name: Annotated[str | None, typer.Option(help="Target name (default: the file stem).")] = None,
    debug: Annotated[bool, typer.Option(help="Show tracebacks.")] = False,
) -> None:
    """Probe every Neuron operation and variant on TARGET's devices; print the matrix and
    optionally write a target file that `--target path` (and mdla_legalize.load_target) takes."""
    err = Console(stderr=True)
    with reported(debug):
        names = _device_list(devices)
        probes = catalogue(only or ())
        if not probes:
            raise WorkbenchError(f"--only {only}: no such op or variant in the catalogue", USAGE)
        with steps() as s:  # on stderr: an SSH phone's connect and uploads, then the probes
            target = open_target(on, progress=s.remote(on))
            available, version = target_info(target)
            missing = [d for d in names if d not in available]
            if missing:
                raise WorkbenchError(
                    f"{on} has no device {', '.join(missing)} (it has: {', '.join(available)})",
                    DEVICE,
                )
            err.print(
                f"probing {len(probes)} models on {on} ({', '.join(names)}), Neuron {version}"
            )
            tick = s.bar("probing", total=len(probes))  # with ETA: 190 s on a phone

            def step(done: int, total: int, result: ProbeResult) -> None:
                s.describe(f"probed {result.probe.key}")
                tick(done)

            matrix = run_probes(target, probes, names, repeat=repeat, progress=step)
        if json:
            typer.echo(dumps(matrix.as_dict(), indent=1))
        else:
            out = Console(width=160)
            out.print(matrix_table(matrix))
            for r in matrix.results:
                if r.skipped:
                    out.print(f"{r.probe.key}: {r.skipped}", highlight=False)
        if output is not None:
            path = write_target_file(matrix, output, name or "")
            err.print(f"wrote {path}: use it with --target {path}")
