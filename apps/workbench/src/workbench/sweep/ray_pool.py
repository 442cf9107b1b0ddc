"""The sweep's tasks as Ray remote tasks: the same `run_task`, the bundle put once in the
object store as bytes (a worker on another node reads no path of the driver's), each row
returned to the driver (which writes the table), a task whose worker is lost retried once.
Each task asks Ray for one CPU and runs torch, OpenBLAS and the emulator on that one thread.

    run_ray(jobs, bundle, on_row, "auto")     # a running cluster; or its address
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from workbench.errors import USAGE, WorkbenchError
from workbench.sweep.bundle import Bundle
from workbench.sweep.pool import OnRow, failed
from workbench.sweep.table import Row
from workbench.sweep.task import Job, run_task
from workbench.sweep.threads import limit

RETRIES = 1  # a worker lost mid-task: run once more elsewhere
CPUS = 1  # each task's CPUs, as Ray schedules them, and so its threads


def _task(job: Job, blob: bytes) -> Row:
    """Run on a Ray worker: the bundle comes from the object store as the driver's bytes."""
    limit(CPUS)
    bundle = pickle.loads(blob)  # the driver's own pickle of a Bundle
    return run_task(job, bundle)


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise WorkbenchError("--ray needs Ray: pip install 'mdla-workbench[ray]'", USAGE) from exc
    return ray


def connect(address: str) -> Any:
    """Ray, connected to `address` (`auto`: the running cluster) unless already initialized."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False)
    return ray


def run_ray(jobs: Sequence[Job], bundle: Bundle, on_row: OnRow, address: str) -> None:
    """Run `jobs` as Ray tasks (CPUS each); rows to `on_row` as they finish."""
    ray = connect(address)
    remote = ray.remote(num_cpus=CPUS, max_retries=RETRIES)(_task)
    blob = ray.put(pickle.dumps(bundle))
    pending = {remote.remote(job, blob): job for job in jobs}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                job = pending.pop(ref)
                on_row(_row(ray, ref, job))
    except BaseException:  # Ctrl-C: stop what still runs; the rows handed over are kept
        for ref in pending:
            ray.cancel(ref, force=True)
        raise


def _row(ray: Any, ref: Any, job: Job) -> Row:
    try:
        row: Row = ray.get(ref)
    except Exception as exc:  # the worker died twice, or Ray failed the task
        return failed(job, f"the Ray task failed: {type(exc).__name__}: {exc}".splitlines()[0])
    return row
