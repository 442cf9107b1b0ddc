"""Witness: the target's live runtime-PM counter (a sparkline of its growth per tick, empty
until two readings make one, with a line saying what it shows), the idle/run protocol around
N runs of the open model (`s`), and the verdict."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Footer, Input, Static

from workbench import witnessing
from workbench.commands.run import manifest_inputs
from workbench.tui.base import WorkScreen
from workbench.tui.spark import Spark

TICK_S = 0.5
HISTORY = 60


class WitnessScreen(WorkScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("s", "start", "Start protocol")]

    def __init__(self) -> None:
        super().__init__()
        self.last_ms: int | None = None
        self.deltas: list[float] = []

    def compose(self) -> ComposeResult:
        yield self.bar()
        yield Static("counter: (none yet)", id="counter")
        yield Spark(f"counter growth per {TICK_S:g} s tick: no readings yet", id="spark")
        with Horizontal(id="settings"):
            yield Static("idle s", classes="label")
            yield Input("4", id="idle", type="number", compact=True)
            yield Static("runs", classes="label")
            yield Input("10", id="runs", type="integer", compact=True)
        yield Static("press s to run the idle control and the runs", id="verdict")
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(TICK_S, self.tick)

    def tick(self) -> None:
        counter = self.session.counter()
        if counter is not None:
            self.sample(counter)

    @work(thread=True, exclusive=True, group="witness-sample", exit_on_error=False)
    def sample(self, counter: witnessing.Counter) -> None:
        reading = witnessing.read(counter)
        self.ui(self.show_reading, counter.what, reading)

    def show_reading(self, what: str, reading: object) -> None:
        active = getattr(reading, "active_ms", None)
        status = getattr(reading, "status", None)
        if active is not None:
            if self.last_ms is not None:
                self.deltas = [*self.deltas, float(active - self.last_ms)][-HISTORY:]
                self.query_one(Spark).data = self.deltas
            self.last_ms = active
        now = (
            "no reading yet (the emulator's node is filled by its first run)"
            if active is None
            else f"runtime_status {status}, runtime_active_time {active} ms"
        )
        self.query_one("#counter", Static).update(f"counter: {what}\n{now}{growth(self.deltas)}")

    def action_start(self) -> None:
        if self.session.manifest is None:
            self.notify("open a model first (Graph screen, o)", severity="warning")
            return
        try:
            idle = float(self.query_one("#idle", Input).value)
            runs = int(self.query_one("#runs", Input).value)
        except ValueError:
            self.notify("idle and runs must be numbers", severity="error")
            return
        self.query_one("#verdict", Static).update(f"idle {idle:g} s, then {runs} runs ...")
        self.protocol(idle, runs)

    @work(thread=True, exclusive=True, group="witness", exit_on_error=False)
    def protocol(self, idle: float, runs: int) -> None:
        manifest = self.session.manifest
        assert manifest is not None  # checked by action_start
        target = self.session.target()
        counter = self.session.counter()
        if counter is None:
            counter = witnessing.counter_for(target, None)
        (_, x), *_ = manifest_inputs(manifest, [])
        w = witnessing.witness_runs(
            target, counter, lambda: target.run(manifest, [x], repeat=runs), idle
        )
        if w.run_ms is not None:  # a run shorter than a tick still shows as one bar
            now = witnessing.read(counter)
            self.ui(self.show_run, float(w.run_ms), getattr(now, "active_ms", None))
        self.ui(self.query_one("#verdict", Static).update, f"{w}\ncounter: {counter.what}")

    def show_run(self, run_ms: float, active_ms: int | None) -> None:
        """The protocol's run delta as one bar; the next tick counts from `active_ms`."""
        self.deltas = [*self.deltas, run_ms][-HISTORY:]
        self.query_one(Spark).data = self.deltas
        if active_ms is not None:
            self.last_ms = active_ms


def growth(deltas: list[float]) -> str:
    """The line under the counter saying what the sparkline shows (nothing before the first
    delta: the sparkline says so itself)."""
    if not deltas:
        return ""
    top = max(deltas)
    what = f"\ngrowth per {TICK_S:g} s tick, last {len(deltas)}: now {deltas[-1]:g} ms"
    return what + (f", max {top:g} ms" if top > 0 else ", none (idle)")
