"""`workbench sweep`: every calibration method x technique compiled and scored on held-out
inputs, one SQLite row each, on a local pool of processes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from mdla_quant import QuantConfig
from workbench.commands.binding import options
from workbench.commands.options import CompileFlags, Debug, JsonOut
from workbench.errors import USAGE, WorkbenchError, reported
from workbench.output import json_output
from workbench.sweep import choose, driver, grid, gridfile, report
from workbench.sweep.pool import cores, run_local
from workbench.sweep.ray_pool import run_ray
from workbench.sweep.table import Table, TableError

EPILOG = """Examples:

  workbench sweep efficientnet_lite0 --count 3 --holdout-count 3 --table lite0.sqlite

  workbench sweep net.py:build --calib random --methods minmax,mse --techniques none,cle \
      --holdout-count 50 --table net.sqlite --workers 2 --task-timeout 600

  workbench sweep efficientnet_lite0 --a16 'none;auto:10%;auto:25%' --techniques none,cle \
      --holdout-count 3 --table lite0.sqlite

  workbench sweep net.py:build --calib random --grid grid.toml --holdout-count 50 \
      --table net.sqlite --ray auto
"""


@dataclass(frozen=True)
class SweepFlags:
    """The grid, the held-out inputs and where the tasks run."""

    grid: Annotated[
        Path | None,
        typer.Option(
            "--grid",
            metavar="FILE",
            help="The grid as a .toml or .json file: methods, techniques, a16 and any of "
            f"{', '.join(grid.FIELDS)}, each a list (an axis) or one value.",
        ),
    ] = None
    methods: Annotated[
        str | None,
        typer.Option(
            "--methods",
            show_default=False,
            help="Calibration methods, comma-separated (default: all four, minmax, "
            "percentile, mse, entropy).",
        ),
    ] = None
    techniques: Annotated[
        str | None,
        typer.Option(
            "--techniques",
            show_default=False,
            help=f"Of {', '.join(grid.TECHNIQUES)}, comma-separated (default: none, cle, "
            "cle+adaround).",
        ),
    ] = None
    holdout: Annotated[
        Path | None,
        typer.Option("--holdout", help="Directory of held-out inputs (never calibration's)."),
    ] = None
    holdout_count: Annotated[
        int | None,
        typer.Option("--holdout-count", min=1, help="Held-out inputs past calibration's."),
    ] = None
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="Local processes (default: one per core)."),
    ] = None
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="auto|ADDRESS",
            help="Run the tasks on a Ray cluster (`auto`: the running one; needs "
            "mdla-workbench[ray]) instead of local processes.",
        ),
    ] = None
    pick: Annotated[
        str | None,
        typer.Option(
            "--pick",
            metavar="CONDITION",
            help="Write the cheapest configuration meeting CONDITION (e.g. "
            "'agreement>=0.99'; metrics agreement, decided, sqnr, latency, bytes (activation "
            "traffic), compile; several joined by commas) to -o; cheapest: the least "
            "activation traffic, then compile time.",
        ),
    ] = None
    out: Annotated[Path | None, typer.Option("-o", "--out", help="The .mdla --pick writes.")] = None
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="PNG of agreement vs activation traffic, the Pareto front in red."
        ),
    ] = None
    task_timeout: Annotated[
        float | None,
        typer.Option("--task-timeout", min=1, help="Seconds a configuration may take."),
    ] = None


@options()
def sweep_command(
    model: Annotated[str, typer.Argument(help="Model spec, as compile takes it.")],
    table: Annotated[Path, typer.Option("--table", help="SQLite file of the results.")],
    flags: CompileFlags,
    sweep: SweepFlags,
    as_json: JsonOut = False,
    debug: Debug = False,
) -> None:
    """Compile MODEL once per configuration of the grid (--methods x --techniques x --a16
    entries, separated by `;`, e.g. 'none;auto:10%'; or --grid FILE; the rest of the
    quantizer's options as given) and score each on held-out inputs: agreement with
    FP32 over all of them and over those FP32 decides (top-1 leads by >= 0.05), with 95 %
    Wilson intervals, the logits' SQNR, compile seconds, the activation bytes an inference
    moves (int16 tensors twice; the Pareto front's cost, the same under any load), the
    emulator's host latency and the .mdla's hash. Rows are written to --table as tasks
    finish; a re-run skips the rows already done (an error row runs again)."""
    with reported(debug), json_output(as_json) as emit:
        opts = dataclasses.replace(flags, a16=None).options(model)  # --a16 is an axis here
        points = _points(opts.quant, sweep, flags.a16)
        wanted = choose.conditions(sweep.pick, sweep.out)
        held = driver.holdout_of(opts, sweep.holdout, sweep.holdout_count)
        jobs, bundle = driver.plan(opts, points, held, sweep.task_timeout)
        runner = _runner(sweep)
        try:
            with Table.open(table) as t:
                rows, ran = driver.execute(jobs, bundle, t, runner)
        except TableError as exc:
            raise WorkbenchError(str(exc)) from exc
        report.show(rows, ran)
        doc = report.document(rows, ran, str(table))
        if sweep.plot is not None:
            choose.write_plot(rows, sweep.plot, f"{model}: {len(rows)} configurations")
        if sweep.pick is not None and sweep.out is not None:
            try:
                chosen, why = choose.write_pick(rows, jobs, wanted, sweep.out)
            except WorkbenchError:
                emit(doc)  # the table still, when no configuration meets --pick
                raise
            typer.echo(why, err=True)
            doc["picked"] = {"key": chosen.key, "why": why, "out": str(sweep.out)}
        emit(doc)


def _points(base: QuantConfig, sweep: SweepFlags, a16: str | None) -> list[grid.Point]:
    """The grid of --grid FILE (a bad one: exit 1) or of the flags (exit 2)."""
    try:
        if sweep.grid is not None:
            axes = gridfile.read_grid(sweep.grid, sweep.methods, sweep.techniques, a16)
        else:
            axes = gridfile.flag_axes(sweep.methods, sweep.techniques, a16)
        return grid.points(base, axes)
    except gridfile.GridFileError as exc:
        raise WorkbenchError(str(exc)) from exc
    except grid.GridError as exc:
        raise WorkbenchError(str(exc), USAGE) from exc


def _runner(sweep: SweepFlags) -> driver.Runner:
    """Ray tasks with --ray, else a local pool of --workers processes (one per core)."""
    address, n = sweep.ray, sweep.workers or cores()
    if address:
        return lambda todo, bundle, on_row: run_ray(todo, bundle, on_row, address)
    return lambda todo, bundle, on_row: run_local(todo, bundle, on_row, n)
