"""Calibrate: method, percentile (for the percentile method only), rounding, the number of
calibration and held-out inputs, the weight rounding (`compile --weight-rounding`) and the
weight techniques (bias correction, cross-layer equalization, AdaRound iterations and what
they reconstruct: each layer's output or each inverted-residual block's) and the int16
activations (`auto[:BUDGET]` or name globs, as `compile --a16`); `a` re-quantizes in a
worker with `workbench.tuning`.

Every setting is calibrated on the first inputs of the calibration source and scored on the
next ones, which the quantizer never saw (a setting scored on its own calibration inputs
reads well by construction). The screen shows the split's sizes, agreement with FP32 as the
output's kind measures it (top-1 with its Wilson 95% interval, or per-pixel for a class
map), and per layer cosine, SQNR and max |error| with each one's delta against the previous
`a` run, beside text bars of both settings' SQNR (`tui.chart`: rows named by op). `k` keeps
(saves) the manifest, `<stem>.tuning.json` (the comparison) and `<stem>.sqnr.png` (the plot)."""

from __future__ import annotations

import math
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Input, Select, Static

import mdla_quant
from mdla_compile import CompileError
from mdla_compile.a16 import a16_request
from mdla_compile.a16 import resolve as resolve_a16
from mdla_compile.events import ignore
from mdla_ir import Graph
from mdla_quant.precision import Request
from workbench import pipeline, tuning
from workbench.agreement import KindScore
from workbench.tui import restore
from workbench.tui.base import WorkScreen
from workbench.tui.chart import Chart, db, signed
from workbench.tui.forms import PathPrompt

NO_YES = [("no", "no"), ("yes", "yes")]
RECONSTRUCTIONS = [(r, r) for r in mdla_quant.RECONSTRUCTIONS]


class CalibrateScreen(WorkScreen):
    AUTO_FOCUS = "#chart-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "apply", "Re-quantize"),
        Binding("k", "keep", "Keep (save)"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.a16: Request | None = None  # the int16 field, parsed by `a` (mdla_compile.a16)
        self.previous: tuning.Trial | None = None
        self.comparison: tuning.Comparison | None = None

    def compose(self) -> ComposeResult:
        yield self.bar()
        with Horizontal(id="settings"):
            yield Static("method", classes="label")
            yield Select(
                [(m, m) for m in mdla_quant.METHODS],
                value="percentile",
                allow_blank=False,
                id="method",
                compact=True,
            )
            yield Static("pct", classes="label", id="pct-label")
            yield Input("99.99", placeholder="percentile", id="percentile", compact=True)
            yield Static("rounding", classes="label")
            yield Select(
                [("double", "double"), ("single", "single")],
                value="double",
                allow_blank=False,
                id="rounding",
                compact=True,
            )
            yield Static("int16", classes="label")
            yield Input("", placeholder="auto:10% | globs", id="a16", compact=True)
        with Horizontal(id="split"):
            yield Static("calibrate on", classes="label")
            yield Input("4", placeholder="inputs", id="count", type="integer", compact=True)
            yield Static("score on", classes="label")
            yield Input("2", placeholder="inputs", id="held-out", type="integer", compact=True)
            yield Static("held out", classes="label")
            yield Static("w. rounding", classes="label")
            yield Select(
                [(r, r) for r in mdla_quant.WEIGHT_ROUNDINGS],
                value=mdla_quant.QuantConfig().weight_rounding,
                allow_blank=False,
                id="weight-rounding",
                compact=True,
            )
        with Horizontal(id="weights", classes="settings"):
            yield Static("bias corr.", classes="label")
            yield Select(NO_YES, value="no", allow_blank=False, id="bias", compact=True)
            yield Static("equalize", classes="label")
            yield Select(NO_YES, value="no", allow_blank=False, id="equalize", compact=True)
            yield Static("adaround iters", classes="label")
            yield Input("0", placeholder="0 = off", id="adaround", type="integer", compact=True)
            yield Static("reconstruct", classes="label")
            yield Select(
                RECONSTRUCTIONS,
                value="layer",
                allow_blank=False,
                id="reconstruction",
                compact=True,
            )
        yield Input("", placeholder="save as (k): path/model.mdla", id="save", compact=True)
        yield Static("open a model, choose settings, press a", id="result")
        with VerticalScroll(id="chart-box"):
            yield Static("", id="chart")
        yield Footer()

    def on_select_changed(self, event: Select.Changed) -> None:
        """The percentile field is there only for the percentile method."""
        if event.select.id == "method":
            shown = event.value == "percentile"
            self.query_one("#pct-label", Static).display = shown
            self.query_one("#percentile", Input).display = shown

    def settings(self) -> tuple[mdla_quant.QuantConfig, int, int]:
        method = str(self.query_one("#method", Select).value)
        rounding = str(self.query_one("#rounding", Select).value)
        try:
            percentile = float(self.query_one("#percentile", Input).value or 99.99)
            count = int(self.query_one("#count", Input).value)
            held_out = int(self.query_one("#held-out", Input).value)
            adaround = int(self.query_one("#adaround", Input).value or 0)
        except ValueError:
            raise ValueError(
                "percentile, calib, held-out and adaround iters must be numbers"
            ) from None
        if count < 1 or held_out < 1:
            raise ValueError(f"calib and held-out need at least 1 input each: {count}, {held_out}")
        config = mdla_quant.QuantConfig(
            method,
            percentile,
            rounding,
            bias_correction=self.query_one("#bias", Select).value == "yes",
            equalize=self.query_one("#equalize", Select).value == "yes",
            adaround=adaround,
            reconstruction=str(self.query_one("#reconstruction", Select).value),
            weight_rounding=str(self.query_one("#weight-rounding", Select).value),
            target=self.session.target_name,
            device=self.session.device,
        )
        return config, count, held_out

    def action_apply(self) -> None:
        session = self.session
        if session.compiled is None and session.recorded is None:
            self.notify("open a model first (Graph screen, o)", severity="warning")
            return
        try:
            config, count, held_out = self.settings()
            self.a16 = a16_request(self.query_one("#a16", Input).value.strip() or None)
        except (ValueError, mdla_quant.QuantError, CompileError) as exc:
            self.notify(str(exc), severity="error")
            return
        if session.compiled is not None or restore.has_stored(session.manifest):
            self.start(config, count, held_out, None)
            return
        self.ask_spec(config, count, held_out)

    def ask_spec(self, config: mdla_quant.QuantConfig, count: int, held_out: int) -> None:
        """A .mdla without its stored float graph: offer to import the spec it records."""
        recorded = self.session.recorded
        assert recorded is not None  # checked by action_apply
        manifest = self.session.manifest
        name = manifest.name if manifest is not None else "the .mdla"
        prompt = PathPrompt(
            f"{name} has no stored float graph but records the model it was compiled from; "
            "enter imports it (its code runs), or type the spec where it is now",
            "model spec",
            recorded.spec,
        )

        def accepted(spec: str | None) -> None:
            if spec:
                self.start(config, count, held_out, spec)

        self.app.push_screen(prompt, accepted)

    def start(
        self, config: mdla_quant.QuantConfig, count: int, held_out: int, spec: str | None
    ) -> None:
        what = f"importing {spec}, then quantizing" if spec else "quantizing"
        self.query_one("#result", Static).update(f"{what} ({tuning.label(config)}) ...")
        self.requantize(config, count, held_out, spec)

    def model(self, spec: str | None) -> tuple[pipeline.Source, Graph]:
        """The float model to re-quantize: the open compile's, the open .mdla's stored float
        graph, or (`spec`) the model the .mdla records, imported as the user accepted."""
        session = self.session
        if session.compiled is not None:
            return session.compiled.source, session.compiled.device_graph
        manifest, recorded = session.manifest, session.recorded
        assert manifest is not None  # checked by action_apply
        if spec is None:
            return restore.stored_source(manifest)
        assert recorded is not None  # what offered `spec`
        compiled = restore.import_recorded(recorded, spec, manifest, session.spec or spec)
        return compiled.source, compiled.device_graph

    @work(thread=True, exclusive=True, group="calibrate", exit_on_error=False)
    def requantize(
        self, config: mdla_quant.QuantConfig, count: int, held_out: int, spec: str | None
    ) -> None:
        """Re-quantize the open model (`model`)."""
        session = self.session
        source, device_graph = self.model(spec)
        calib = session.options.calib_name
        if calib == "auto":
            calib = "samples" if source.preprocess else "random"  # as compile picks
        split = tuning.split_calibration(calib, source, count, held_out)
        result = self.query_one("#result", Static)
        if self.a16 is not None:  # chosen on the calibration inputs, never the scored ones
            self.ui(result.update, f"choosing int16 tensors ({tuning.label(config)}) ...")
            config, _ = resolve_a16(self.a16, device_graph, split.calibration, config, ignore)

        def progress(n: int) -> None:
            self.ui(result.update, f"quantizing ({tuning.label(config)}) ... {n}/{count} inputs")

        def layers(i: int, n: int, name: str) -> None:  # AdaRound: minutes on a real model
            line = f"quantizing ({tuning.label(config)}) ... adaround {i}/{n} layers: {name}"
            self.ui(result.update, line)

        kinds = session.options.output_kinds
        new = tuning.trial(
            source, device_graph, split, config, progress, layers, output_kinds=kinds
        )
        comparison = tuning.compare(new, comparable(self.previous, new))
        session.sqnr = worst_by_op(new.layers)
        session.install(new.compiled)
        self.ui(self.show, comparison)

    def show(self, c: tuning.Comparison) -> None:
        self.comparison, self.previous = c, c.new
        self.query_one("#result", Static).update(summary(c))
        self.query_one("#chart", Static).update(Chart(c))

    def action_keep(self) -> None:
        c = self.comparison
        path = self.query_one("#save", Input).value.strip()
        if c is None:
            self.notify("nothing to save yet: press a first", severity="warning")
        elif not path:
            self.query_one("#save", Input).focus()
            self.notify("type a path ending in .mdla, then press k again", severity="warning")
        else:
            try:
                paths = tuning.save(c, path)
                self.session.manifest = pipeline.load_manifest(path)
            except Exception as exc:  # a bad path is a notification, never a crash
                self.notify(str(exc), title="save", severity="error")
                return
            self.notify(f"saved {path}, {paths['json'].name}, {paths['plot'].name}", title="save")


def comparable(previous: tuning.Trial | None, new: tuning.Trial) -> tuning.Trial | None:
    """The previous run, if it scored the same model on the same held-out inputs after
    calibrating on as many: deltas across different splits or models would mean nothing."""
    if previous is None:
        return None
    same = (
        previous.compiled.source.spec == new.compiled.source.spec
        and previous.calibration_count == new.calibration_count
        and previous.held_out == new.held_out
    )
    return previous if same else None


def worst_by_op(layers: tuple[tuning.Layer, ...]) -> dict[str, float]:
    """The Graph screen's SQNR column: each op's worst tensor on the held-out inputs."""
    worst: dict[str, float] = {}
    for t in layers:
        worst[t.op] = min(worst.get(t.op, math.inf), t.sqnr_db)
    return worst


def summary(c: tuning.Comparison) -> str:
    """Three lines: the split, the new setting's scores, the change against the previous."""
    new, doc = c.new, tuning.comparison_doc(c)
    lines = [
        f"calibrated on {new.calibration_count}, scored on {len(new.held_out)} held-out inputs "
        "the quantizer never saw",
        f"{new.label}: {new.metric()}",
        f"mean SQNR {db(doc['new']['mean_sqnr_db'])} dB, worst {db(doc['new']['worst_sqnr_db'])} "
        f"dB, output cosine {new.output_cosine:.5f}",
    ]
    if c.previous is not None:
        p, old = doc["previous"], c.previous
        mean = _d(doc["new"]["mean_sqnr_db"], p["mean_sqnr_db"])
        worst = _d(doc["new"]["worst_sqnr_db"], p["worst_sqnr_db"])
        line = f"vs {old.label}: mean {signed(mean, '{:+.1f}')} dB, "
        line += f"worst {signed(worst, '{:+.1f}')} dB"
        if new.agreement is not None and old.agreement is not None:
            pts = (new.agreement.rate - old.agreement.rate) * 100
            line += f", agreement {pts:+.0f} pts"
        if new.pixel_agreement is not None and old.pixel_agreement is not None:
            pts = (new.pixel_agreement - old.pixel_agreement) * 100
            line += f", pixel agreement {pts:+.2f} pts"
        line += _kind_delta(new.kind_score, old.kind_score)
        lines.append(line)
    return "\n".join(lines)


def _kind_delta(new: KindScore | None, old: KindScore | None) -> str:
    """The change of a boxes', keypoints' or raw output's agreement ("" when there is none)."""
    if new is None or old is None or new.value is None or old.value is None:
        return ""
    name = {"boxes": "box F1", "keypoints": "keypoint OKS"}.get(new.kind, "output SQNR")
    if new.kind == "raw":
        return f", {name} {signed(_d(new.value, old.value), '{:+.1f}')} dB"
    return f", {name} {new.value - old.value:+.3f}"


def _d(new: float, old: float) -> float:
    return 0.0 if new == old else new - old
