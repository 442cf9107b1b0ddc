"""Where a command's output goes: `--json` documents on stdout, people's text and progress on
stderr.

    with json_output(as_json) as emit:      # --json: console()/typer.echo now write to stderr
        ...                                 # the command prints for people as always
        emit({"model": ..., "ops": ...})    # the one JSON document, on the real stdout

    with steps() as s:                      # progress on stderr, so stdout stays clean
        with s.step("importing"):           # a spinner and elapsed time (no total known)
            ...
        tick = s.bar("calibrating", total=6)  # a bar with ETA; tick(n) after n done
        target = mdla_runtime.open_target(on, progress=s.remote(on))  # an SSH phone's steps
                                            # a C build meanwhile (the emulator, the engine:
                                            # tens of seconds, once) is a step of its own

Progress policy: shown when stderr is a terminal (the bars animate there), silent in a pipe or
a CI log, so their stderr stays the one `error:` line STYLE.md promises. `MDLA_PROGRESS=1` asks
for it anyway (then rich prints each bar's final line once, when its steps end: readable in a
log), `MDLA_PROGRESS=0` silences it on a terminal too.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

import mdla_runtime
from mdla_emu.build import announced, cache_dir
from mdla_runtime import StepProgress
from mdla_runtime.engine.ssh import SshTarget
from mdla_runtime.format.budget import DEFAULT as DEFAULT_BUDGET
from mdla_runtime.format.budget import Budget
from mdla_runtime.jsontext import dumps as dumps  # strict JSON, re-exported for the commands
from mdla_runtime.jsontext import jsonable as jsonable


def stderr_console() -> Console:
    """Rich console on stderr (made per call: it writes wherever stderr is now)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def json_output(enabled: bool) -> Iterator[Callable[[Any], None]]:
    """With `enabled`, stdout is stderr inside the block (all human text moves there) and
    `emit(doc)` writes one JSON line to the real stdout; without, `emit` does nothing."""
    if not enabled:
        yield lambda _doc: None
        return
    real = sys.stdout

    def emit(doc: Any) -> None:
        real.write(dumps(doc) + "\n")
        real.flush()

    with contextlib.redirect_stdout(sys.stderr):
        yield emit


class Amount(MofNCompleteColumn):
    """done/total, or kB or MB (by the total) for a transfer (a task with unit="bytes")."""

    def render(self, task: Task) -> Text:
        if task.fields.get("unit") == "bytes":
            total = task.total or 0
            scale, unit = (1e6, "MB") if total >= 1e6 else (1e3, "kB")
            sent = f"{task.completed / scale:.1f}/{total / scale:.1f} {unit}"
            return Text(sent, style="progress.download")
        return super().render(task)


class Steps:
    """Named steps of one command on one rich Progress (see the module docstring)."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._last: TaskID | None = None  # the latest step or bar (`describe` renames it)

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[None]:
        """A step of unknown length: a spinner while it runs, then done (1/1)."""
        done = self.begin(what)
        yield
        done()

    def begin(self, what: str) -> Callable[[], None]:
        """`step` without the block: a spinner now; the returned `done()` marks it done."""
        progress = self._progress
        if progress is None:
            return lambda: None
        task = self._last = progress.add_task(what, total=None)
        return lambda: progress.update(task, total=1, completed=1)

    def bar(self, what: str, total: int) -> Callable[[int], None]:
        """A step of `total` items; the returned `tick(done)` moves the bar (with ETA)."""
        progress = self._progress
        if progress is None:
            return lambda _n: None
        task: TaskID = progress.add_task(what, total=total)
        self._last = task
        return lambda n: progress.update(task, completed=n)

    def describe(self, text: str) -> None:
        """Rename the latest step or bar (the item it is on)."""
        if self._progress is not None and self._last is not None:
            self._progress.update(self._last, description=text)

    def remote(self, on: str) -> StepProgress | None:
        """Target `on`'s remote steps (`mdla_runtime.StepProgress`: an SSH phone's connect,
        work directory, engine, uploads, runs) as lines of this display, named by its host:
        one line per step (a repeated one, as each image's upload, reuses its line), an upload
        in kB or MB with ETA. None when progress is off (and for a local target, which has
        no such steps)."""
        progress = self._progress
        if progress is None or not on.startswith("ssh://"):
            return None
        host = urlsplit(on.split("?")[0]).hostname or on
        tasks: dict[str, TaskID] = {}

        def report(step: str, done: int, total: int) -> None:
            task = tasks.get(step)
            if task is None:
                task = tasks[step] = progress.add_task(f"{host}: {step}", total=None)
            if done == 0:  # the step (again): a spinner, or a transfer of `total` bytes
                unit = "bytes" if total else ""
                progress.reset(task, total=total or None, completed=0, unit=unit)
            else:
                progress.update(task, completed=done, total=total)

        return report

    def building(self, name: str) -> Callable[[], None]:
        """A C build (`mdla_emu.build.announced`): a step naming what and where it is cached."""
        what = BUILT.get(name, name)
        return self.begin(f"building {what} (C, first use; cached in {cache_dir()})")

    def layers(self, what: str) -> Callable[[int, int, str], None]:
        """A bar that appears on its first call `(done, total, name)`: AdaRound's layers."""
        progress = self._progress
        if progress is None:
            return lambda _i, _n, _name: None
        task = progress.add_task(what, total=None, visible=False)
        return lambda i, n, name: progress.update(
            task, completed=i, total=n, visible=True, description=f"{what} {name}"
        )


def open_target(on: str, budget: Budget = DEFAULT_BUDGET) -> mdla_runtime.Target:
    """`mdla_runtime.open_target`, an SSH phone's opening steps (connect, work directory, engine
    build or check, adapter) shown on stderr while they run; its later steps stay quiet (`run`
    and `probe` show those as well, on the display they keep open). Not inside another
    `steps()` display: rich shows one at a time."""
    with steps() as s:
        target = mdla_runtime.open_target(on, budget, progress=s.remote(on))
    if isinstance(target, SshTarget):
        target.progress = None  # its display has ended
    return target


BUILT = {"libneuron_emu.so": "the emulator", "mdla-engine": "the engine"}  # C builds, named
T = TypeVar("T")


def each(items: Sequence[T], what: str = "") -> Iterator[T]:
    """`items` one by one under a bar on stderr naming the current one, with ETA (benches:
    their rows stay on stdout)."""
    with steps() as s:
        tick = s.bar(what, total=len(items))
        for i, item in enumerate(items):
            s.describe(f"{what} {item}".strip())
            yield item
            tick(i + 1)


def enabled() -> bool:
    """MDLA_PROGRESS=1 or 0 decides; unset, progress shows when stderr is a terminal."""
    asked = os.environ.get("MDLA_PROGRESS", "")
    return asked == "1" or (asked != "0" and sys.stderr.isatty())


@contextlib.contextmanager
def steps() -> Iterator[Steps]:
    if not enabled():
        yield Steps(None)
        return
    with Progress(
        SpinnerColumn(finished_text="✓"),
        TextColumn("{task.description}"),
        BarColumn(),
        Amount(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr_console(),
        redirect_stdout=False,  # stdout is the command's (a pipe, --json): never rerouted
    ) as progress:
        shown = Steps(progress)
        with announced(shown.building):
            yield shown
