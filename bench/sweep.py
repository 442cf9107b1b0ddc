"""`workbench sweep`'s fan-out: the same grid run with 1 local worker, 2 local workers and
(with --ray) Ray on this machine, each into its own fresh table. Per run: wall seconds, the
tasks' CPU seconds (each task measures its own process), CPU / wall (how many cores the run
kept busy), and the load average before and after (on a shared machine the wall ratio says
little: read the CPU columns and the load); then the ratios against the issue's targets
(2 workers >= 1.8x the wall speed of 1; Ray within 15 % of the local pool).

    .venv/bin/python bench/sweep.py                               # tiny model, 2 x 2 grid
    .venv/bin/python bench/sweep.py --preset idle                 # the idle measurement
    .venv/bin/python bench/sweep.py --model efficientnet_lite0 --calib samples --count 3 \
        --holdout-count 3 --methods minmax,percentile,mse,entropy \
        --techniques none,cle,cle+adaround --a16 'auto:10%;auto:25%' --ray

`--preset idle`: lite0, 4 methods x {none, cle} x a16 {none, auto:10%, auto:25%} (24 tasks), 3
calibration photos and 2 held-out ones, 1 worker, 2 workers and Ray; flags given as well
override its values. `--tasks` lists each task's CPU and compile seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mdla_compile import CompileOptions
from workbench.sweep import choose, driver, grid, gridfile, report
from workbench.sweep.bundle import Bundle
from workbench.sweep.pool import OnRow, run_local
from workbench.sweep.ray_pool import run_ray
from workbench.sweep.table import Table
from workbench.sweep.task import Job

TINY = str(Path(__file__).resolve().parents[1] / "tests" / "workbench" / "tiny_model.py") + ":tiny"
PRESETS: dict[str, dict[str, object]] = {
    "idle": {
        "model": "efficientnet_lite0",
        "calib": "samples",
        "count": 3,
        "holdout_count": 2,
        "methods": "minmax,percentile,mse,entropy",
        "techniques": "none,cle",
        "a16": "none;auto:10%;auto:25%",
        "runs": "1,2",
        "ray": True,
        "tasks": True,
    },
}
TARGET_WORKERS, TARGET_RAY = 1.8, 0.15  # issue 36: 2 workers' speed-up; Ray's distance


@dataclass(frozen=True)
class Run:
    name: str
    wall_s: float
    task_cpu_s: float  # the tasks' own CPU seconds, summed
    all_cpu_s: float | None  # this process and its ended children (a local pool's workers,
    # their start and imports too); None for Ray (its workers are not our children)
    tasks: int
    errors: int
    load: tuple[float, float]  # 1-minute load average before, after
    per_task: tuple[tuple[str, float, float], ...] = ()  # label, CPU s, compile s (wall)

    def line(self) -> str:
        busy = self.task_cpu_s / self.wall_s if self.wall_s else 0.0
        every = "   -   " if self.all_cpu_s is None else f"{self.all_cpu_s:7.1f}"
        return (
            f"{self.name:10s} wall {self.wall_s:7.1f} s  task CPU {self.task_cpu_s:7.1f} s "
            f"(CPU/wall {busy:4.2f})  all CPU {every} s  {self.tasks} tasks, {self.errors} errors  "
            f"load {self.load[0]:.1f} -> {self.load[1]:.1f} on {os.cpu_count()} cores"
        )


def all_cpu() -> float:
    """CPU seconds of this process and of its children that ended."""
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed(name: str, jobs: list[Job], bundle: Bundle, runner: driver.Runner, table: Path) -> Run:
    before, cpu0 = os.getloadavg()[0], all_cpu()
    start = time.perf_counter()
    with Table.open(table) as t:
        rows, ran = driver.execute(jobs, bundle, t, runner, progress=False)
    seconds = time.perf_counter() - start
    every = None if name == "ray" else all_cpu() - cpu0
    cpu = sum(r.cpu_s or 0.0 for r in rows)
    errors = sum(1 for r in rows if r.error)
    each = tuple((r.label, r.cpu_s or 0.0, r.compile_s or 0.0) for r in rows)
    return Run(name, seconds, cpu, every, ran, errors, (before, os.getloadavg()[0]), each)


def local(n: int) -> driver.Runner:
    def runner(jobs: Sequence[Job], bundle: Bundle, on_row: OnRow) -> None:
        run_local(jobs, bundle, on_row, n)

    return runner


def on_ray(jobs: Sequence[Job], bundle: Bundle, on_row: OnRow) -> None:
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    run_ray(jobs, bundle, on_row, "auto")


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--preset", choices=sorted(PRESETS), help="a named measurement's flags")
    p.add_argument("--model", default=TINY)
    p.add_argument("--calib", default="random")
    p.add_argument("--count", type=int, default=2)
    p.add_argument("--holdout-count", type=int, default=4)
    p.add_argument("--methods", default="minmax,mse")
    p.add_argument("--techniques", default="none,cle")
    p.add_argument("--a16", default=None, help="entries separated by `;` (sweep's --a16)")
    p.add_argument("--runs", default="1,2", help="local worker counts to run, e.g. 1,2")
    p.add_argument(
        "--ray", action=argparse.BooleanOptionalAction, help="also run the grid on a local Ray"
    )
    p.add_argument("--plot", type=Path, help="the last run's Pareto PNG (and its table shown)")
    p.add_argument("--json", type=Path, help="write the runs' figures here as JSON")
    p.add_argument(
        "--tasks", action=argparse.BooleanOptionalAction, help="each task's CPU and compile s"
    )
    preset = p.parse_known_args(argv)[0].preset
    if preset is not None:
        p.set_defaults(**PRESETS[preset])
    return p.parse_args(argv)


def ratios(runs: Sequence[Run]) -> list[str]:
    """Each run against the first (wall speed-up, CPU ratio) and Ray against the best local
    run, with the issue's targets; the verdicts hold only on an otherwise idle machine."""
    first, lines = runs[0], []
    for run in runs[1:]:
        speed = first.wall_s / run.wall_s if run.wall_s else 0.0
        cpu = run.task_cpu_s / first.task_cpu_s if first.task_cpu_s else 0.0
        target = f" (target >= {TARGET_WORKERS}x)" if run.name == "2 workers" else ""
        lines.append(
            f"{run.name} vs {first.name}: wall {speed:.2f}x faster{target}, task CPU {cpu:.2f}x"
        )
    local = [r for r in runs if r.name != "ray"]
    ray = [r for r in runs if r.name == "ray"]
    if ray and local:
        best = min(local, key=lambda r: r.wall_s)
        off = ray[0].wall_s / best.wall_s - 1 if best.wall_s else 0.0
        lines.append(
            f"ray vs {best.name}: wall {off:+.1%} (target within {TARGET_RAY:.0%}), task CPU "
            f"{ray[0].task_cpu_s:.1f} s against {best.task_cpu_s:.1f} s"
        )
    return lines


def task_lines(run: Run) -> list[str]:
    """The run's tasks, longest first, and how many took 10 s of CPU or more."""
    long = sum(1 for _, cpu, _ in run.per_task if cpu >= 10)
    head = f"{run.name}: {len(run.per_task)} tasks, {long} of >= 10 s CPU"
    rows = sorted(run.per_task, key=lambda t: -t[1])
    return [head] + [
        f"  {cpu:6.1f} s CPU  compile {wall:6.1f} s  {label}" for label, cpu, wall in rows
    ]


def show(table: Path, png: Path, title: str) -> None:
    """The table as `workbench sweep` prints it, and its Pareto PNG."""
    with Table.open(table) as t:
        rows = t.rows()
    report.show(rows, len(rows))
    choose.write_plot(rows, png, title)


def main() -> None:
    a = arguments()
    options = CompileOptions(a.model, calib=a.calib, count=a.count)
    points = grid.points(options.quant, gridfile.flag_axes(a.methods, a.techniques, a.a16))
    holdout = driver.holdout_of(options, None, a.holdout_count)
    jobs, bundle = driver.plan(options, points, holdout, None)
    print(f"{a.model}: {len(jobs)} configurations, {holdout.size} held-out inputs", flush=True)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        plan = [(f"{n} worker{'s' * (n > 1)}", local(n)) for n in map(int, a.runs.split(","))]
        plan += [("ray", on_ray)] if a.ray else []
        for name, runner in plan:
            table = Path(tmp) / f"{name.replace(' ', '-')}.sqlite"
            runs.append(timed(name, jobs, bundle, runner, table))
            print(runs[-1].line(), flush=True)
        if a.plot is not None:
            show(table, a.plot, f"{a.model}: {len(jobs)} configurations")
    if a.tasks:
        for run in runs:
            print("\n".join(task_lines(run)))
    print("\n".join(ratios(runs)))
    print(f"load now {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores")
    driver_cpu = resource.getrusage(resource.RUSAGE_SELF)
    print(f"driver CPU {driver_cpu.ru_utime + driver_cpu.ru_stime:.1f} s")
    if a.json is not None:
        a.json.write_text(json.dumps([dataclasses.asdict(r) for r in runs], indent=1))


if __name__ == "__main__":
    main()
