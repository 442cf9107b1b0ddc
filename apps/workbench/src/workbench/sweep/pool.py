"""Where the tasks run: a local pool of processes (one per core by default), each receiving
the bundle once; rows go to `on_row` in the order tasks finish. A task whose process dies is an
error row; Ctrl-C ends the workers and propagates (the rows already handed over are kept).

    run_local(jobs, bundle, on_row, workers=2)
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed

from workbench.sweep.bundle import Bundle
from workbench.sweep.table import Row
from workbench.sweep.task import Job, base_row, run_task

OnRow = Callable[[Row], None]
_BUNDLE: list[Bundle] = []  # a pool worker's bundle, set once by `_init`


def cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def _init(bundle: Bundle) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    _BUNDLE[:] = [bundle]


def _pooled(job: Job) -> Row:
    return run_task(job, _BUNDLE[0])


def failed(job: Job, message: str) -> Row:
    """The error row of a task that produced no row of its own (its worker died)."""
    return base_row(job, error=message)


def _row(future: Future[Row], job: Job) -> Row:
    try:
        return future.result()
    except Exception as exc:  # BrokenProcessPool: the worker died (killed, out of memory)
        return failed(job, f"the worker process died: {type(exc).__name__} {exc}".strip())


def run_local(jobs: Sequence[Job], bundle: Bundle, on_row: OnRow, workers: int) -> None:
    """Run `jobs` on `workers` processes (spawned: no forked torch state)."""
    pool = ProcessPoolExecutor(
        max_workers=max(1, min(workers, len(jobs))),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init,
        initargs=(bundle,),
    )
    try:
        futures = {pool.submit(_pooled, job): job for job in jobs}
        for future in as_completed(futures):
            on_row(_row(future, futures[future]))
    except BaseException:  # Ctrl-C (or the table failing): end the workers now
        for process in list(pool._processes.values()):
            process.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
