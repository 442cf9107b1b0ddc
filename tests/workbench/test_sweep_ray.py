"""`workbench sweep --ray`: the same tasks as Ray remote tasks on a local Ray cluster this
module starts (2 CPUs, no dashboard). Ray is a test dependency (requirements-dev.txt): without
it these tests fail, they are not skipped."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import ray

from mdla_compile import CompileOptions
from tests.workbench.conftest import TINY, UNMAPPABLE
from workbench.sweep import driver, grid
from workbench.sweep.bundle import Bundle, Holdout
from workbench.sweep.pool import OnRow, run_local
from workbench.sweep.ray_pool import run_ray
from workbench.sweep.table import Row, Table
from workbench.sweep.task import Job

MEASURED_HERE = ("compile_s", "latency_ms", "worker", "cpu_s")  # timings, places: not compared


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _plan(spec: str, methods: str) -> tuple[list[Job], Bundle]:
    options = CompileOptions(spec, calib="random", count=2)
    return driver.plan(options, grid.grid(options.quant, methods, "none"), Holdout(random=3), None)


def _values(rows: Sequence[Row]) -> list[dict[str, Any]]:
    docs = [dataclasses.asdict(r) for r in sorted(rows, key=lambda r: r.key)]
    return [{k: v for k, v in d.items() if k not in MEASURED_HERE} for d in docs]


def _on_ray(seen: list[str]) -> driver.Runner:
    def runner(jobs: Sequence[Job], bundle: Bundle, on_row: OnRow) -> None:
        seen.extend(j.method for j in jobs)
        run_ray(jobs, bundle, on_row, "auto")

    return runner


def test_ray_and_the_local_pool_give_equal_rows_and_a_resume_runs_the_missing(
    cluster: None, tmp_path: Path
) -> None:
    jobs, bundle = _plan(TINY, "minmax,mse")
    with Table.open(tmp_path / "local.sqlite") as t:
        local, _ = driver.execute(jobs, bundle, t, lambda j, b, o: run_local(j, b, o, 2))
    seen: list[str] = []
    with Table.open(tmp_path / "ray.sqlite") as t:
        remote, ran = driver.execute(jobs, bundle, t, _on_ray(seen))
    assert ran == 2
    assert all(r.ok for r in remote), [r.error for r in remote]
    assert _values(local) == _values(remote)
    with sqlite3.connect(tmp_path / "ray.sqlite") as db:
        db.execute("DELETE FROM sweep WHERE method = 'mse'")
    seen.clear()
    with Table.open(tmp_path / "ray.sqlite") as t:
        resumed, ran = driver.execute(jobs, bundle, t, _on_ray(seen))
    assert (ran, seen) == (1, ["mse"])
    assert _values(resumed) == _values(local)


def test_a_ray_task_that_raises_is_an_error_row(cluster: None, tmp_path: Path) -> None:
    jobs, bundle = _plan(UNMAPPABLE, "minmax")
    with Table.open(tmp_path / "t.sqlite") as t:
        rows, ran = driver.execute(jobs, bundle, t, _on_ray([]))
    assert ran == 1
    assert rows[0].error
    assert rows[0].agree_all is None
