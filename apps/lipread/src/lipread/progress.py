"""Progress of `lipread`'s long steps on stderr (stdout stays the sentence, or `--json`).

    with stages(5) as stage:             # one bar over named stages, with elapsed time
        stage("decoding video"); ...     # each call finishes the previous stage
    with counted("calibrating", n) as tick:  # a bar over n items, with ETA
        tick()
    with phases("tracking the face") as report:  # one bar whose phase and total change
        report("keyframes", done, total)

A bar opened while another is on screen (the face tracker's, inside `lipread VIDEO`'s stages)
joins that display as a second line: rich allows one live display at a time.

Shown when stderr is a terminal, silent in a pipe or a CI log (stderr stays the one error
line); `MDLA_PROGRESS=1` asks for it anyway (each bar's final line, printed once), `0` silences
it everywhere: the workbench reads the same variable (`workbench.output`).

Each `stage()` and `tick()` also stops the command if a Ctrl-C came meanwhile and was only
remembered (it landed inside an import: `mdla_runtime.interrupt.check`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from mdla_runtime.interrupt import check

_active: list[Progress] = []  # the display on screen now; bars opened inside join it


def _progress() -> Progress | None:
    asked = os.environ.get("MDLA_PROGRESS", "")
    if not (asked == "1" or (asked != "0" and sys.stderr.isatty())):
        return None
    return Progress(
        SpinnerColumn(finished_text="✓"),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True, highlight=False),
        redirect_stdout=False,  # stdout is the sentence or --json: never rerouted
    )


@contextlib.contextmanager
def _shown() -> Iterator[Progress | None]:
    """The display on screen, else a new one (shown until the block ends), else None (off)."""
    if _active:
        yield _active[-1]
        return
    progress = _progress()
    if progress is None:
        yield None
        return
    with progress:
        _active.append(progress)
        try:
            yield progress
        finally:
            _active.pop()


@contextlib.contextmanager
def stages(total: int) -> Iterator[Callable[[str], None]]:
    """`stage(name)` marks the previous stage done and names the running one."""
    with _shown() as progress:
        if progress is None:
            yield lambda _name: check()
            return
        task = progress.add_task("starting", total=total)
        started = [0]

        def stage(name: str) -> None:
            check()
            progress.update(task, completed=started[0], description=name)
            started[0] += 1

        yield stage
        progress.update(task, completed=total, description="done")


@contextlib.contextmanager
def counted(what: str, total: int) -> Iterator[Callable[[], None]]:
    """`tick()` after each of `total` items."""
    with _shown() as progress:
        if progress is None:
            yield check
            return
        task = progress.add_task(what, total=total)

        def tick() -> None:
            check()
            progress.advance(task)

        yield tick


@contextlib.contextmanager
def phases(what: str) -> Iterator[Callable[[str, int, int], None]]:
    """`report(phase, done, total)`: one bar, "what: phase", at done of total (with ETA); a new
    phase restarts it (the face tracker's keyframes, then its batched rounds over frames)."""
    with _shown() as progress:
        if progress is None:
            yield lambda _phase, _done, _total: None
            return
        task = progress.add_task(what, total=None)
        shown = [""]

        def report(phase: str, done: int, total: int) -> None:
            text = f"{what}: {phase}"
            if text != shown[0]:  # a new phase: its own elapsed time and speed, for the ETA
                shown[0] = text
                progress.reset(task, total=total, completed=done, description=text)
            else:
                progress.update(task, completed=done, total=total)

        yield report
        progress.update(task, description=f"{what}: done")
