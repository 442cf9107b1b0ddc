"""The compile-options form (every `workbench compile` option the TUI offers) and the path
prompt behind save and export. Both are modal and return their value through `dismiss`."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Select, Static

import mdla_legalize
import mdla_quant
from mdla_ir.devices import DEFAULT_TARGET, DEVICES
from workbench import pipeline
from workbench.tui.state import CompileOptions


def split_list(text: str) -> tuple[str, ...]:
    """`a, b c` -> ("a", "b", "c"): the form's lists (skip rules, --cpu tokens)."""
    return tuple(t for t in text.replace(",", " ").split() if t)


def parse_options(
    spec: str,
    target: str,
    device: str,
    skip: str,
    cpu: str,
    method: str,
    percentile: str,
    bias: bool,
    calib: str,
    count: str,
) -> CompileOptions:
    """The form's text as CompileOptions; a bad field is a ValueError naming the field."""
    if not spec.strip():
        raise ValueError("model: type a model spec or OUT.mdla")
    rules = split_list(skip)
    unknown = [r for r in rules if r not in pipeline.rule_names()]
    if unknown:
        raise ValueError(f"skip rules: unknown rule {', '.join(unknown)}")
    try:
        pct = float(percentile) if percentile.strip() else 99.99
    except ValueError:
        raise ValueError(f"percentile: `{percentile}` is not a number") from None
    if not 0 < pct <= 100:
        raise ValueError(f"percentile: {pct:g} is not in (0, 100]")
    try:
        n = int(count)
    except ValueError:
        raise ValueError(f"count: `{count}` is not a whole number") from None
    if n < 1:
        raise ValueError(f"count: {n} must be at least 1")
    if method not in mdla_quant.METHODS:
        raise ValueError(f"method: unknown `{method}`")
    # cpu tokens are checked against the graph when it compiles (a usage error names them)
    return CompileOptions(
        spec.strip(),
        target.strip() or DEFAULT_TARGET,
        device,
        rules,
        split_list(cpu),
        method,
        pct,
        bias,
        calib.strip(),
        n,
    )


class CompileForm(ModalScreen[CompileOptions | None]):
    """Model, target, device, skip rules, CPU partitions, method, percentile (only for the
    percentile method), bias correction, calibration source and count; enter compiles."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "submit", "Compile"),
    ]

    def __init__(self, options: CompileOptions) -> None:
        super().__init__()
        self.options = options

    def compose(self) -> ComposeResult:
        o = self.options
        targets = sorted({*mdla_legalize.known_targets(), o.target})
        with Vertical(id="form"):
            yield Static("compile (enter or ctrl+s compiles, escape cancels)", id="form-title")
            with Grid(id="form-grid"):
                yield Static("model", classes="label")
                yield Input(o.spec, placeholder="model spec or OUT.mdla", id="f-spec")
                yield Static("target", classes="label")
                yield Select(
                    [(t, t) for t in targets], value=o.target, allow_blank=False, id="f-target"
                )
                yield Static("device", classes="label")
                yield Select(
                    [(d, d) for d in DEVICES], value=o.device, allow_blank=False, id="f-device"
                )
                yield Static("skip rules", classes="label")
                yield Input(" ".join(o.skip_rules), placeholder="rule names (none)", id="f-skip")
                yield Static("cpu (--cpu)", classes="label")
                yield Input(",".join(o.cpu), placeholder="LAYER_NORM,GELU features.7.*", id="f-cpu")
                yield Static("method", classes="label")
                yield Select(
                    [(m, m) for m in mdla_quant.METHODS],
                    value=o.method,
                    allow_blank=False,
                    id="f-method",
                )
                yield Static("percentile", classes="label")
                yield Input(f"{o.percentile:g}", id="f-percentile")
                yield Static("bias corr.", classes="label")
                yield Select(
                    [("no", False), ("yes", True)],
                    value=o.bias_correction,
                    allow_blank=False,
                    id="f-bias",
                )
                yield Static("calibration", classes="label")
                yield Input(
                    o.calib, placeholder="samples, random or DIR (blank: auto)", id="f-calib"
                )
                yield Static("count", classes="label")
                yield Input(str(o.count), id="f-count", type="integer")
            yield Static("", id="form-error")
            with Horizontal(id="form-buttons"):
                yield Button("Compile", id="f-ok", variant="primary")
                yield Button("Cancel", id="f-cancel")

    def on_mount(self) -> None:
        self.show_percentile()
        self.query_one("#f-spec", Input).focus()

    @on(Select.Changed, "#f-method")
    def show_percentile(self) -> None:
        """Only the percentile method has a percentile: the field is disabled for the rest."""
        self.query_one("#f-percentile", Input).disabled = (
            self.query_one("#f-method", Select).value != "percentile"
        )

    def value(self) -> CompileOptions:
        def text(i: str) -> str:
            return self.query_one(f"#f-{i}", Input).value

        def choice(i: str) -> object:
            return self.query_one(f"#f-{i}", Select).value

        return parse_options(
            text("spec"),
            str(choice("target")),
            str(choice("device")),
            text("skip"),
            text("cpu"),
            str(choice("method")),
            text("percentile"),
            choice("bias") is True,
            text("calib"),
            text("count"),
        )

    def action_submit(self) -> None:
        try:
            options = self.value()
        except ValueError as exc:
            self.query_one("#form-error", Static).update(f"error: {exc}")
            return
        self.dismiss(options)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def _enter(self) -> None:
        self.action_submit()

    @on(Button.Pressed, "#f-ok")
    def _ok(self) -> None:
        self.action_submit()

    @on(Button.Pressed, "#f-cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class PathPrompt(ModalScreen[str | None]):
    """One path (save .mdla, export .tflite); enter accepts, escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str) -> None:
        super().__init__()
        self.title_text, self.placeholder = title, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt"):
            yield Static(self.title_text, id="prompt-title")
            yield Input(placeholder=self.placeholder, id="prompt-path")

    @on(Input.Submitted)
    def _done(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
