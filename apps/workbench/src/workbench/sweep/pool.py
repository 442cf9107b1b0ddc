"""Where the tasks run: a local pool of processes (one per core by default), each receiving
the bundle once and its share of the cores (`threads.share`: with 2 workers on 2 cores, one
thread each for torch, OpenBLAS and the emulator); rows go to `on_row` in the order tasks
finish. A task whose process dies is an error row; Ctrl-C ends the workers and propagates (the
rows already handed over are kept).

    run_local(jobs, bundle, on_row, workers=2)
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

from workbench.sweep.bundle import Bundle
from workbench.sweep.table import Row
from workbench.sweep.task import Job, base_row, run_task
from workbench.sweep.threads import cores, limit, limited, share

__all__ = ["OnRow", "cores", "failed", "run_local", "shared", "spawned"]

OnRow = Callable[[Row], None]
_SHARED: list[Any] = []  # what every task of a pool worker reads, set once by `_init`


def _init(shared: Any, threads: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    limit(threads)
    _SHARED[:] = [shared]


def shared() -> Any:
    """In a worker of `spawned`: the value its pool was started with."""
    return _SHARED[0]


@contextmanager
def spawned(workers: int, tasks: int, value: Any) -> Iterator[ProcessPoolExecutor]:
    """A pool of min(workers, tasks) spawned processes (no forked torch state), each given
    `value` once (`shared()`) and the cores' share of threads (set in the environment they
    start with, before they import torch or numpy); an exception here (Ctrl-C, a failed task)
    ends them at once."""
    n = max(1, min(workers, tasks))
    with limited(share(n)):  # the processes start on demand, within this block
        pool = ProcessPoolExecutor(
            max_workers=n,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init,
            initargs=(value, share(n)),
        )
        try:
            yield pool
        except BaseException:
            for process in list(pool._processes.values()):
                process.terminate()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _pooled(job: Job) -> Row:
    return run_task(job, shared())


def failed(job: Job, message: str) -> Row:
    """The error row of a task that produced no row of its own (its worker died)."""
    return base_row(job, error=message)


def _row(future: Future[Row], job: Job) -> Row:
    try:
        return future.result()
    except Exception as exc:  # BrokenProcessPool: the worker died (killed, out of memory)
        return failed(job, f"the worker process died: {type(exc).__name__} {exc}".strip())


def run_local(jobs: Sequence[Job], bundle: Bundle, on_row: OnRow, workers: int) -> None:
    """Run `jobs` on `workers` processes, each given the bundle once."""
    with spawned(workers, len(jobs), bundle) as pool:
        futures = {pool.submit(_pooled, job): job for job in jobs}
        for future in as_completed(futures):
            on_row(_row(future, futures[future]))
