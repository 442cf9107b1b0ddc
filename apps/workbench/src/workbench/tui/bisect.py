"""Bisect: op-prefix bisection of the open model on the target, in a worker, with a live log
and progress; when it ends, the failing op is selected in the Graph view. The bar is still
while idle, and a result is dropped when another model is opened (it was about the old one)."""

from __future__ import annotations

import math
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Log, ProgressBar, Static

from workbench import bisection
from workbench.tui.base import WorkScreen


class BisectScreen(WorkScreen):
    AUTO_FOCUS = "#log"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("s", "start", "Start bisection")]

    def __init__(self) -> None:
        super().__init__()
        self.generation = -1  # the session.generation the log is about

    def on_screen_resume(self) -> None:
        if self.generation != self.session.generation:
            self.generation = self.session.generation
            self.query_one(Log).clear()
            self.query_one(ProgressBar).update(total=1, progress=0)
            self.query_one("#status", Static).update(
                "press s to bisect the open model on the target"
            )

    def compose(self) -> ComposeResult:
        yield self.bar()
        yield Static("press s to bisect the open model on the target", id="status")
        yield ProgressBar(total=1, show_eta=False, id="progress")
        yield Log(id="log", auto_scroll=True)
        yield Footer()

    def action_start(self) -> None:
        manifest = self.session.manifest
        if manifest is None:
            self.notify("open a model first (Graph screen, o)", severity="warning")
            return
        n = len(manifest.operations)
        bar = self.query_one(ProgressBar)
        bar.update(total=1 + max(1, math.ceil(math.log2(max(n, 2)))), progress=0)
        self.query_one(Log).clear()
        self.generation = self.session.generation
        device = self.session.device
        self.query_one("#status", Static).update(
            f"bisecting {n} ops on {device} ({self.session.target_spec})"
        )
        self.run_bisect()

    @work(thread=True, exclusive=True, group="bisect", exit_on_error=False)
    def run_bisect(self) -> None:
        manifest = self.session.manifest
        assert manifest is not None  # checked by action_start
        target = self.session.target()

        def step(s: bisection.Step) -> None:
            self.ui(self.log_line, str(s))

        device = self.session.device
        index = bisection.bisect(target, manifest, device, step)
        if index is None:
            self.ui(self.finish, f"all {len(manifest.operations)} ops map on {device}", None)
            return
        graph = self.session.compiled.device_graph if self.session.compiled else None
        found = bisection.culprit(manifest, index, device, graph)
        self.ui(self.finish, str(found), index)

    def log_line(self, line: str) -> None:
        self.query_one(Log).write_line(line)
        self.query_one(ProgressBar).advance(1)

    def finish(self, text: str, index: int | None) -> None:
        bar = self.query_one(ProgressBar)
        bar.update(progress=bar.total or 1)
        self.query_one("#status", Static).update(text)
        self.query_one(Log).write_line(text)
        if index is not None:
            self.session.selected = index
            self.app.switch_mode("graph")
            self.notify(text, title="bisect", severity="warning", timeout=8)

    def worker_failed(self, error: BaseException) -> None:
        self.query_one("#status", Static).update(f"bisection failed: {error}")
