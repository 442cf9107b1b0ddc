"""A sweep from its options to its rows: the held-out inputs chosen (never the calibration
inputs), the jobs keyed, those already in the table skipped, the rest run and each row written
as it arrives, with a progress line and an ETA on stderr.

    holdout = holdout_of(options, None, 20)
    jobs, bundle = plan(options, points, holdout, timeout=600)
    rows = execute(jobs, bundle, table, runner)
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from mdla_compile import CompileOptions
from mdla_compile.calibration import SOURCES
from mdla_compile.images import SAMPLES
from mdla_compile.inputs import input_files
from workbench.errors import WorkbenchError
from workbench.sweep.bundle import Bundle, Holdout, bundle_of, read_files
from workbench.sweep.grid import Point
from workbench.sweep.pool import OnRow
from workbench.sweep.table import Row, Table
from workbench.sweep.task import Job, job_key

Runner = Callable[[Sequence[Job], Bundle, OnRow], None]


def holdout_of(options: CompileOptions, folder: Path | None, count: int | None) -> Holdout:
    """--holdout DIR (checked against a --calib folder's files), or --holdout-count N inputs
    past the calibration's: the next files of a --calib folder, the sample photos calibration
    leaves, or random inputs of another seed."""
    if folder is not None:
        return _holdout_dir(options, folder)
    n = count or 0
    if n < 1:
        raise WorkbenchError("give --holdout DIR or --holdout-count N (N >= 1)", 2)
    calib = options.calib
    if calib == "random":
        return Holdout(random=n)
    if calib == "samples":
        left = list(SAMPLES)[options.count :]
        if len(left) < n:
            raise WorkbenchError(
                f"--holdout-count {n}: calibration takes {options.count} of the {len(SAMPLES)} "
                f"sample photos, {len(left)} left: lower --count or give --holdout DIR",
                2,
            )
        return Holdout(samples=tuple(left[:n]))
    if not isinstance(calib, str) or calib == "auto":
        raise WorkbenchError("--holdout-count with --calib auto: name --calib or --holdout", 2)
    left_files = input_files(calib)[options.count :]
    if len(left_files) < n:
        raise WorkbenchError(
            f"--holdout-count {n}: {calib} holds {len(left_files)} inputs past the "
            f"{options.count} calibration takes: lower --count or give --holdout DIR",
            2,
        )
    return Holdout(files=read_files(left_files[:n]))


def _holdout_dir(options: CompileOptions, folder: Path) -> Holdout:
    files = read_files(input_files(folder))
    calib = options.calib
    if isinstance(calib, str) and calib not in SOURCES:
        used = {data for _, data in read_files(input_files(calib)[: options.count])}
        for name, data in files:
            if data in used:
                raise WorkbenchError(
                    f"--holdout {folder}: `{name}` is also a calibration input in "
                    f"{calib}: hold out files calibration never sees"
                )
    return Holdout(files=files)


def plan(
    options: CompileOptions, points: Sequence[Point], holdout: Holdout, timeout: float | None
) -> tuple[list[Job], Bundle]:
    """One job per grid point, each keyed by its configuration, spec and input bytes."""
    bundle = bundle_of(options, holdout)
    jobs = []
    for p in points:
        opts = dataclasses.replace(options, quant=p.config, a16=p.a16)
        key = job_key(opts, bundle)
        jobs.append(Job(key, p.method, p.technique, opts, timeout, p.variant))
    return jobs, bundle


class Progress:
    """`[done/total] method technique: agreement, compile s; ETA` lines on a stream."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total, self.done, self.start = total, 0, time.monotonic()
        self.stream = stream or sys.stderr

    def eta(self) -> str:
        if not self.done:
            return "?"
        left = (time.monotonic() - self.start) / self.done * (self.total - self.done)
        return f"{int(left // 60)}m{int(left % 60):02d}s"

    def __call__(self, row: Row) -> None:
        self.done += 1
        what = f"error: {row.error}" if row.error else _measures(row)
        line = f"[{self.done}/{self.total}] {row.label}: {what}; ETA {self.eta()}"
        self.stream.write(line + "\n")
        self.stream.flush()


def _measures(row: Row) -> str:
    agree = "-" if row.agree_all is None else f"{row.agree_all:.1%}"
    return f"agreement {agree}, compile {row.compile_s or 0:.1f} s, {row.latency_ms or 0:.2f} ms"


def execute(
    jobs: Sequence[Job], bundle: Bundle, table: Table, runner: Runner, progress: bool = True
) -> tuple[list[Row], int]:
    """Run the jobs the table lacks; (the rows of every job, how many ran now)."""
    done = table.done_keys()
    todo = [j for j in jobs if j.key not in done]
    shown = Progress(len(todo)) if progress else None

    def on_row(row: Row) -> None:
        table.add(row)
        if shown is not None:
            shown(row)

    if todo:
        runner(todo, bundle, on_row)
    return table.rows({j.key for j in jobs}), len(todo)
