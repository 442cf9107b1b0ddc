"""Progress of `lipread`'s long steps on stderr (stdout stays the sentence, or `--json`).

    with stages(5) as stage:             # one bar over named stages, with elapsed time
        stage("decoding video"); ...     # each call finishes the previous stage
    with counted("calibrating", n) as tick:  # a bar over n items, with ETA
        tick()

Shown when stderr is a terminal, silent in a pipe or a CI log (stderr stays the one error
line); `MDLA_PROGRESS=1` asks for it anyway (each bar's final line, printed once), `0` silences
it everywhere: the workbench reads the same variable (`workbench.output`).
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
def stages(total: int) -> Iterator[Callable[[str], None]]:
    """`stage(name)` marks the previous stage done and names the running one."""
    progress = _progress()
    if progress is None:
        yield lambda _name: None
        return
    with progress:
        task = progress.add_task("starting", total=total)
        started = [0]

        def stage(name: str) -> None:
            progress.update(task, completed=started[0], description=name)
            started[0] += 1

        yield stage
        progress.update(task, completed=total, description="done")


@contextlib.contextmanager
def counted(what: str, total: int) -> Iterator[Callable[[], None]]:
    """`tick()` after each of `total` items."""
    progress = _progress()
    if progress is None:
        yield lambda: None
        return
    with progress:
        task = progress.add_task(what, total=total)
        yield lambda: progress.advance(task)
