"""Run: N runs of the open model on chosen images: latency per run as a sparkline (median and
min beside it) and per image what its output kind calls for (`tui.outputs`): a classifier's
top-5, a class map's per-pixel agreement and classes, a detector's boxes, a tensor's values."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from rich.table import Table
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Footer, Input, Static

from workbench import dense, validation
from workbench.commands.run import manifest_inputs
from workbench.tui import outputs
from workbench.tui.base import WorkScreen
from workbench.tui.spark import Spark

HEADINGS = {
    validation.CLASSIFIER: "top-5",
    validation.CLASS_MAP: "class map (INT8)",
    outputs.BOXES: "boxes (INT8)",
    "keypoints": "keypoints (INT8)",
    validation.TENSOR: "output (INT8)",
}


class RunScreen(WorkScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("s", "start", "Run")]

    def __init__(self) -> None:
        super().__init__()
        self.predictions: dict[str, str] = {}  # image -> its summary, as shown

    def compose(self) -> ComposeResult:
        yield self.bar()
        with Horizontal(id="settings"):
            yield Input("", placeholder="images (blank: sample photos)", id="images", compact=True)
            yield Static("runs", classes="label")
            yield Input("10", id="runs", type="integer", compact=True)
        yield Static("press s to run the open model", id="latency")
        yield Spark("latency per run: none yet", id="spark")
        yield Static("", id="predictions")
        yield Footer()

    def action_start(self) -> None:
        if self.session.manifest is None:
            self.notify("open a model first (Graph screen, o)", severity="warning")
            return
        try:
            runs = max(1, int(self.query_one("#runs", Input).value))
        except ValueError:
            self.notify("runs must be a number", severity="error")
            return
        images = self.query_one("#images", Input).value.split()
        self.query_one("#latency", Static).update(f"running {runs} time(s) per image ...")
        self.run_model(images, runs)

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def run_model(self, images: list[str], runs: int) -> None:
        manifest = self.session.manifest
        assert manifest is not None  # checked by action_start
        target = self.session.target()
        compiled = self.session.compiled
        float_graph = (  # an open .mdla's: the float graph compile stored beside it, if any
            compiled.source.graph if compiled is not None else dense.stored_graph(manifest)[0]
        )
        kind = outputs.output_kind(manifest)
        table = Table(box=None, pad_edge=False)
        table.add_column("image", no_wrap=True)
        table.add_column(HEADINGS.get(kind, kind))
        latencies: list[float] = []
        device = ""
        for name, x in manifest_inputs(manifest, images):
            for _ in range(runs):
                r = target.run(manifest, [x], devices=(self.session.device,))
                latencies.append(r.latency_ms[0])
                device = r.device
                self.ui(self.show_latency, list(latencies), device)
            line = outputs.summary(kind, manifest, x, r.outputs, float_graph)
            self.predictions[name] = line
            table.add_row(name, line)
        self.ui(self.query_one("#predictions", Static).update, table)

    def show_latency(self, latencies: list[float], device: str) -> None:
        self.query_one(Spark).data = latencies
        self.query_one("#latency", Static).update(
            f"{len(latencies)} run(s) on {device}: median {np.median(latencies):.2f} ms, "
            f"min {min(latencies):.2f} ms, max {max(latencies):.2f} ms"
        )
