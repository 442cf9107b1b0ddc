"""Calibrate: method, percentile, rounding, number of calibration inputs and the weight
techniques (bias correction, cross-layer equalization, AdaRound iterations); re-quantize in a
worker; per-layer SQNR as a bar chart, top-1 agreement and the delta against the previous
setting; `k` keeps (saves) the current manifest."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Input, Select, Static

import mdla_ir
import mdla_quant
from workbench import pipeline
from workbench.images import top_k
from workbench.tui.base import WorkScreen
from workbench.tui.state import sqnr_by_op

BAR_DB = 60.0  # a full bar
NO_YES = [("no", "no"), ("yes", "yes")]


@dataclass(frozen=True)
class Trial:
    label: str
    mean_db: float
    worst_db: float
    agreement: float


class CalibrateScreen(WorkScreen):
    AUTO_FOCUS = "#chart-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "apply", "Re-quantize"),
        Binding("k", "keep", "Keep (save)"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.previous: Trial | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="settings"):
            yield Static("method", classes="label")
            yield Select(
                [(m, m) for m in mdla_quant.METHODS],
                value="percentile",
                allow_blank=False,
                id="method",
                compact=True,
            )
            yield Static("pct", classes="label")
            yield Input("99.99", placeholder="percentile", id="percentile", compact=True)
            yield Static("rounding", classes="label")
            yield Select(
                [("double", "double"), ("single", "single")],
                value="double",
                allow_blank=False,
                id="rounding",
                compact=True,
            )
            yield Static("images", classes="label")
            yield Input("4", placeholder="images", id="count", type="integer", compact=True)
        with Horizontal(id="weights", classes="settings"):
            yield Static("bias corr.", classes="label")
            yield Select(NO_YES, value="no", allow_blank=False, id="bias", compact=True)
            yield Static("equalize", classes="label")
            yield Select(NO_YES, value="no", allow_blank=False, id="equalize", compact=True)
            yield Static("adaround iters", classes="label")
            yield Input("0", placeholder="0 = off", id="adaround", type="integer", compact=True)
        yield Input("", placeholder="save as (k): path/model.mdla", id="save", compact=True)
        yield Static("open a model, choose settings, press a", id="result")
        with VerticalScroll(id="chart-box"):
            yield Static("", id="chart")
        yield Footer()

    def settings(self) -> tuple[mdla_quant.QuantConfig, int]:
        method = str(self.query_one("#method", Select).value)
        rounding = str(self.query_one("#rounding", Select).value)
        try:
            percentile = float(self.query_one("#percentile", Input).value)
            count = int(self.query_one("#count", Input).value)
            adaround = int(self.query_one("#adaround", Input).value or 0)
        except ValueError:
            raise ValueError("percentile, images and adaround iters must be numbers") from None
        config = mdla_quant.QuantConfig(
            method,
            percentile,
            rounding,
            bias_correction=self.query_one("#bias", Select).value == "yes",
            equalize=self.query_one("#equalize", Select).value == "yes",
            adaround=adaround,
        )
        return config, count

    def action_apply(self) -> None:
        if self.session.compiled is None:
            self.notify("open a model spec first (Graph screen, o)", severity="warning")
            return
        try:
            config, count = self.settings()
        except (ValueError, mdla_quant.QuantError) as exc:
            self.notify(str(exc), severity="error")
            return
        self.query_one("#result", Static).update(f"quantizing ({config.method}) ...")
        self.requantize(config, count)

    @work(thread=True, exclusive=True, group="calibrate", exit_on_error=False)
    def requantize(self, config: mdla_quant.QuantConfig, count: int) -> None:
        old = self.session.compiled
        assert old is not None  # checked by action_apply
        source = old.source
        calib = pipeline.calibration_inputs(
            "samples" if source.preprocess else "random", source, count
        )
        compiled = pipeline.quantize_graph(source, old.device_graph, calib, config)
        report = mdla_quant.compare(compiled.device_graph, compiled.qgraph, calib)
        same = 0
        for xs in calib:
            (f,) = mdla_ir.run_float(source.graph, xs)
            (q,) = mdla_quant.run_int8(compiled.qgraph, xs)
            same += top_k(f, None, 1)[0][0] == top_k(q, None, 1)[0][0]
        self.session.sqnr = sqnr_by_op(report)
        self.session.install(compiled)
        label = f"{config.method} p{config.percentile:g} {config.rounding} ×{len(calib)}"
        techniques = [
            name
            for name, on in (
                ("bias", config.bias_correction),
                ("eq", config.equalize),
                (f"ada{config.adaround}", config.adaround),
            )
            if on
        ]
        label += "".join(f" +{t}" for t in techniques)
        finite = [t.sqnr_db for t in report.tensors if math.isfinite(t.sqnr_db)]
        trial = Trial(
            label,
            float(np.mean(finite)) if finite else math.inf,
            min(t.sqnr_db for t in report.tensors),
            same / len(calib),
        )
        self.ui(self.show, trial, self.session.sqnr)

    def show(self, trial: Trial, sqnr: dict[str, float]) -> None:
        text = (
            f"{trial.label}: mean SQNR {trial.mean_db:.1f} dB, worst {trial.worst_db:.1f} dB, "
            f"top-1 agreement {trial.agreement:.0%}"
        )
        if self.previous is not None:
            p = self.previous
            text += (
                f"\nvs {p.label}: mean {trial.mean_db - p.mean_db:+.1f} dB, worst "
                f"{trial.worst_db - p.worst_db:+.1f} dB, agreement "
                f"{(trial.agreement - p.agreement) * 100:+.0f} pts"
            )
        self.previous = trial
        self.query_one("#result", Static).update(text)
        self.query_one("#chart", Static).update(chart(sqnr))

    def action_keep(self) -> None:
        manifest = self.session.manifest
        compiled = self.session.compiled
        path = self.query_one("#save", Input).value.strip()
        if manifest is None or compiled is None:
            self.notify("nothing to save yet", severity="warning")
        elif not path:
            self.query_one("#save", Input).focus()
            self.notify("type a path ending in .mdla, then press k again", severity="warning")
        else:
            try:
                pipeline.save_manifest(compiled, Path(path))
            except Exception as exc:  # a bad path is a notification, never a crash
                self.notify(str(exc), title="save", severity="error")
                return
            self.session.manifest = pipeline.load_manifest(path)
            self.notify(f"saved {path}", title="save")


def chart(sqnr: dict[str, float], width: int = 30) -> Table:
    table = Table(box=None, show_header=True, pad_edge=False)
    table.add_column("layer", no_wrap=True, max_width=28)
    table.add_column("SQNR dB", justify="right")
    table.add_column("", no_wrap=True)
    for name, db in sorted(sqnr.items(), key=lambda kv: kv[1]):
        n = width if math.isinf(db) else round(max(0.0, min(db, BAR_DB)) / BAR_DB * width)
        style = "red" if db < 20 else "yellow" if db < 30 else "green"
        table.add_row(name, "inf" if math.isinf(db) else f"{db:.1f}", Text("█" * n, style=style))
    return table
