"""`workbench sweep --ray` (and `validate --dataset --ray`'s shards): the same tasks as Ray
remote tasks on a local Ray cluster this module starts (2 CPUs, no dashboard). Ray is a test
dependency (requirements-dev.txt): without it these tests fail, they are not skipped."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
import ray

import mdla_compile
from mdla_compile import CompileOptions
from mdla_compile.inputs import input_files
from tests.workbench.conftest import TINY, TINY_IMAGES, UNMAPPABLE
from tests.workbench.test_validate_shards import assert_same_validation, dataset
from workbench.documents import validation_doc
from workbench.sweep import driver, fanout, grid, shards
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


SPEC = '''import os
import signal
import time
from pathlib import Path

import torch
from torch import nn

LOG = Path({log!r})


def build():
    """The first {kills} calls are killed (SIGKILL) mid-task, later ones sleep {sleep} s and
    build; each logs `kill PID` or `build PID`."""
    kills = LOG.read_text().count("kill") if LOG.exists() else 0
    with LOG.open("a") as f:
        f.write(f"{{'kill' if kills < {kills} else 'build'}} {{os.getpid()}}\\n")
    if kills < {kills}:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep({sleep})
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval(), torch.zeros(1, 3, 8, 8)
'''


def _spec(tmp_path: Path, kills: int, sleep: float = 0) -> tuple[str, Path]:
    log = tmp_path / "attempts.log"
    path = tmp_path / "killed.py"
    path.write_text(SPEC.format(log=str(log), kills=kills, sleep=sleep))
    return f"{path}:build", log


def _ray_rows(spec: str, tmp_path: Path, timeout: float | None = None) -> list[Row]:
    options = CompileOptions(spec, calib="random", count=1)
    points = grid.grid(options.quant, "minmax", "none")
    jobs, bundle = driver.plan(options, points, Holdout(random=1), timeout)
    with Table.open(tmp_path / "t.sqlite") as t:
        rows, _ = driver.execute(jobs, bundle, t, _on_ray([]))
    return rows


def test_a_ray_worker_killed_mid_task_is_retried_once_and_the_row_produced(
    cluster: None, tmp_path: Path
) -> None:
    spec, log = _spec(tmp_path, kills=1)
    (row,) = _ray_rows(spec, tmp_path)
    lines = [line.split() for line in log.read_text().splitlines()]
    killed = [pid for what, pid in lines if what == "kill"]
    built = {pid for what, pid in lines if what == "build"}
    assert row.ok, row.error
    assert row.sqnr_db is not None  # scored (a raw output: SQNR, no agreement)
    assert len(row.manifest_sha256) == 64
    assert len(killed) == 1
    assert row.worker.rsplit(":", 1)[1] in built  # the retry's process made the row
    assert killed[0] not in built


def test_a_ray_worker_killed_twice_is_an_error_row(cluster: None, tmp_path: Path) -> None:
    spec, log = _spec(tmp_path, kills=2)
    (row,) = _ray_rows(spec, tmp_path)
    assert log.read_text().split()[::2] == ["kill", "kill"]  # the run and one retry, no more
    assert row.error.startswith("the Ray task failed:"), row.error
    assert row.agree_all is None


def test_task_timeout_holds_under_ray(cluster: None, tmp_path: Path) -> None:
    # The task sleeps far past any plausible start-up of Ray's workers on a loaded 2-core host
    # (40 s was exceeded at load 13), so only a timeout that fails to hold can reach the bound.
    spec, _ = _spec(tmp_path, kills=0, sleep=600)
    start = time.monotonic()
    (row,) = _ray_rows(spec, tmp_path, timeout=2)
    assert row.error == "timed out after 2 s (--task-timeout)", row.error
    assert time.monotonic() - start < 300


def test_validate_shards_on_ray_give_the_one_shard_figures(cluster: None, tmp_path: Path) -> None:
    compiled = mdla_compile.compile(CompileOptions(TINY_IMAGES, count=2))
    files = input_files(dataset(tmp_path / "ds", 5))
    blob = shards.shared_of(compiled, TINY_IMAGES)
    whole = shards.merge([shards.run_shard(blob, s) for s in shards.shards_of(files, 5)])
    parts = fanout.map_ray(shards.run_shard, blob, shards.shards_of(files, 2), "auto")
    assert len(parts) == 3
    assert len(whole.rows) == 5
    assert_same_validation(
        validation_doc(whole, TINY_IMAGES, "emu"),
        validation_doc(shards.merge(parts), TINY_IMAGES, "emu"),
    )


THREADS_SPEC = '''import os
from pathlib import Path

import torch
from torch import nn


def build():
    """Logs the threads the task runs with: torch's, then MKL's variable."""
    Path({out!r}).write_text(f"{{torch.get_num_threads()}} {{os.environ.get('MKL_NUM_THREADS')}}")
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval(), torch.zeros(1, 3, 8, 8)
'''


def test_ray_tasks_run_on_the_threads_of_their_cpus(cluster: None, tmp_path: Path) -> None:
    seen = tmp_path / "threads.txt"
    (tmp_path / "threads.py").write_text(THREADS_SPEC.format(out=str(seen)))
    (row,) = _ray_rows(f"{tmp_path / 'threads.py'}:build", tmp_path)
    assert row.ok, row.error
    assert seen.read_text() == "1 1"  # Ray's one CPU per task: torch and MKL on one thread
    getenv = cast(Callable[[bytes, str], str], os.getenv)  # os.getenv(name, default) there
    got = fanout.map_ray(getenv, cast(bytes, "OPENBLAS_NUM_THREADS"), ["unset"] * 2, "auto")
    assert got == ["1", "1"]  # validate's shards likewise
