"""One sweep task: compile a configuration and score it on the held-out inputs (never the
calibration inputs: a held-out input equal to one of them is an error). The local pool and
Ray run this same function; whatever it raises becomes the row's error.

    row = run_task(job, bundle)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import resource
import signal
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

import mdla_compile
from mdla_compile import CompileOptions
from mdla_quant import QuantConfig
from mdla_runtime.interrupt import in_chain
from workbench.sweep.bundle import Bundle, materialize
from workbench.sweep.cost import traffic
from workbench.sweep.table import Row

Array = np.ndarray[Any, Any]
HOLDOUT_SEED = 1_000_003  # random held-out inputs; calibration's random inputs use the option's
AGAIN = 0.5  # seconds between a task's timeout alarms after the first


@dataclass(frozen=True)
class Job:
    key: str
    method: str
    technique: str
    options: CompileOptions
    timeout: float | None = None  # seconds; None: no limit
    variant: str = ""  # the grid point's a16 and field-axis values


class TaskTimeoutError(Exception):
    """The task ran past --task-timeout."""


class HeldOutError(Exception):
    """A held-out input is also a calibration input."""


def job_key(options: CompileOptions, bundle: Bundle) -> str:
    """sha256 of the configuration, the spec and its options, and every byte the task reads."""
    assert isinstance(options.model, str)
    doc = {
        "config": dataclasses.asdict(options.quant),
        "options": repr(options),
        "bytes": bundle.digest(),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def config_json(job: Job) -> str:
    return quant_json(job.options.quant)


def quant_json(config: QuantConfig) -> str:
    return json.dumps(dataclasses.asdict(config), sort_keys=True, default=list)


def base_row(job: Job, **measures: Any) -> Row:
    """The row of `job` with `measures` (the keys, configuration and labels always)."""
    spec = str(job.options.model)
    row = Row(job.key, spec, job.method, job.technique, config_json(job), variant=job.variant)
    return dataclasses.replace(row, **measures)


def cpu_seconds() -> float:
    """CPU time of this process and of its children that ended (a C build, say)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def run_task(job: Job, bundle: Bundle) -> Row:
    """The row of `job`: its measures, or the one-line error of whatever it raised."""
    where = f"{socket.gethostname()}:{os.getpid()}"
    cpu = cpu_seconds()
    try:
        # the deadline ends before the directory's removal (a repeated alarm cannot stop it)
        with tempfile.TemporaryDirectory(prefix="mdla-sweep-") as tmp, deadline(job.timeout):
            measured = _measure(job, bundle, Path(tmp))
    except Exception as exc:  # the task's failure is the row's content
        from workbench.errors import one_line

        # the alarm may land inside code that wraps what it raises (a spec's loader)
        late = in_chain(exc, TaskTimeoutError)
        error = str(late) if late else one_line(exc) or type(exc).__name__
        return base_row(job, error=error, worker=where, cpu_s=cpu_seconds() - cpu)
    return base_row(job, worker=where, cpu_s=cpu_seconds() - cpu, **measured)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """TaskTimeoutError after `seconds` (a real-time alarm in the main thread, where a pool
    worker and a Ray worker both run their tasks; in another thread, or with None, no limit),
    and again every AGAIN seconds until the block ends: code that catches every exception
    (torch's import, loading its optional CUDA libraries) may swallow the first."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TaskTimeoutError(f"timed out after {seconds:g} s (--task-timeout)")

    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, AGAIN)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def _measure(job: Job, bundle: Bundle, tmp: Path) -> dict[str, Any]:
    from workbench.sweep.score import held_out, score

    options = materialize(job.options, bundle, tmp)
    start = time.perf_counter()
    compiled = mdla_compile.compile(options)
    seconds = time.perf_counter() - start
    prov = compiled.qgraph.provenance  # the spec the user named, not this task's copy of it
    named = dataclasses.replace(prov, spec=str(job.options.model))
    compiled.qgraph = compiled.qgraph.with_(provenance=named)
    manifest = compiled.save(tmp / "model.mdla", store_float=False)
    digest = hashlib.sha256((tmp / "model.mdla").read_bytes()).hexdigest()
    inputs = held_out(compiled, bundle.holdout, tmp)
    check_disjoint(compiled.calibration, inputs)
    measured = {"compile_s": seconds, "manifest_sha256": digest}
    measured |= traffic(compiled.device_graph, compiled.config.a16)
    # the configuration compiled: --a16's entry resolved to the tensors held in int16
    return {**score(compiled, manifest, inputs), **measured, "config": quant_json(compiled.config)}


def _digest(xs: Sequence[Array]) -> str:
    h = hashlib.sha256()
    for x in xs:
        a = np.ascontiguousarray(x)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def check_disjoint(
    calibration: Sequence[list[Array]], inputs: Sequence[tuple[str, list[Array]]]
) -> None:
    """HeldOutError when a held-out input equals a calibration input, array for array."""
    seen = {_digest(xs) for xs in calibration}
    for name, xs in inputs:
        if _digest(xs) in seen:
            raise HeldOutError(
                f"held-out input `{name}` is also a calibration input: score on inputs "
                "calibration never saw (--holdout DIR of other files)"
            )


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else 0.0
