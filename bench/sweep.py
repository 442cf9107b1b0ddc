"""`workbench sweep`'s fan-out: the same grid run with 1 local worker, 2 local workers and
(with --ray) Ray on this machine, each into its own fresh table; wall time per run, and the
load average before and after each (on a shared machine a ratio says little: read the load).

    .venv/bin/python bench/sweep.py                               # tiny model, 2 x 2 grid
    .venv/bin/python bench/sweep.py --model efficientnet_lite0 --calib samples --count 3 \
        --holdout-count 3 --methods minmax,percentile,mse,entropy \
        --techniques none,cle,cle+adaround --ray
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from mdla_compile import CompileOptions
from workbench.sweep import driver, grid
from workbench.sweep.bundle import Bundle
from workbench.sweep.pool import OnRow, run_local
from workbench.sweep.ray_pool import run_ray
from workbench.sweep.table import Table
from workbench.sweep.task import Job

TINY = str(Path(__file__).resolve().parents[1] / "tests" / "workbench" / "tiny_model.py") + ":tiny"


def timed(name: str, jobs: list[Job], bundle: Bundle, runner: driver.Runner, tmp: Path) -> float:
    before = os.getloadavg()[0]
    start = time.perf_counter()
    with Table.open(tmp / f"{name}.sqlite") as t:
        rows, ran = driver.execute(jobs, bundle, t, runner, progress=False)
    seconds = time.perf_counter() - start
    errors = sum(1 for r in rows if r.error)
    after = os.getloadavg()[0]
    print(
        f"{name:10s} {seconds:8.1f} s  {ran} tasks, {errors} errors  "
        f"load {before:.1f} -> {after:.1f} on {os.cpu_count()} cores"
    )
    return seconds


def local(n: int) -> driver.Runner:
    def runner(jobs: Sequence[Job], bundle: Bundle, on_row: OnRow) -> None:
        run_local(jobs, bundle, on_row, n)

    return runner


def on_ray(jobs: Sequence[Job], bundle: Bundle, on_row: OnRow) -> None:
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    run_ray(jobs, bundle, on_row, "auto")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=TINY)
    p.add_argument("--calib", default="random")
    p.add_argument("--count", type=int, default=2)
    p.add_argument("--holdout-count", type=int, default=4)
    p.add_argument("--methods", default="minmax,mse")
    p.add_argument("--techniques", default="none,cle")
    p.add_argument("--ray", action="store_true", help="also run the grid on a local Ray")
    a = p.parse_args()
    options = CompileOptions(a.model, calib=a.calib, count=a.count)
    points = grid.grid(options.quant, a.methods, a.techniques)
    holdout = driver.holdout_of(options, None, a.holdout_count)
    jobs, bundle = driver.plan(options, points, holdout, None)
    print(f"{a.model}: {len(jobs)} configurations, {holdout.size} held-out inputs")
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        one = timed("1 worker", jobs, bundle, local(1), Path(tmp))
        two = timed("2 workers", jobs, bundle, local(2), Path(tmp))
        print(f"2 workers / 1 worker: {one / two:.2f}x faster (see the load above)")
        if a.ray:
            ray_s = timed("ray", jobs, bundle, on_ray, Path(tmp))
            print(f"ray / 2 local workers: {ray_s / two:.2f}x the time")


if __name__ == "__main__":
    main()
