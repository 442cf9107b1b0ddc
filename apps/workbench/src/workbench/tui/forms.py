"""The compile-options form (what `workbench compile` takes, as the same `CompileOptions`
record) and the path prompt behind save and export. Both are modal and return their value
through `dismiss`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Select, Static

import mdla_compile
import mdla_legalize
import mdla_quant
from mdla_compile import CompileOptions
from mdla_compile.contract import Contract, contract_from
from mdla_ir.devices import DEFAULT_TARGET, DEVICES
from workbench import pipeline
from workbench.commands.options import ImportPathName


def split_list(text: str) -> tuple[str, ...]:
    """`a, b c` -> ("a", "b", "c"): the form's lists (skip rules, --cpu tokens)."""
    return tuple(t for t in text.replace(",", " ").split() if t)


def _number(field: str, text: str, default: float) -> float:
    try:
        return float(text) if text.strip() else default
    except ValueError:
        raise ValueError(f"{field}: `{text}` is not a number") from None


def parse_options(fields: Mapping[str, str], base: CompileOptions) -> CompileOptions:
    """The form's text (keyed by FIELDS) as the compile record, over `base` (what the form does
    not show: channels, resize, crop, seed); a bad field is a ValueError naming it."""
    spec = fields["spec"].strip()
    if not spec:
        raise ValueError("model: type a model spec or OUT.mdla")
    rules = split_list(fields["skip"])
    unknown = [r for r in rules if r not in pipeline.rule_names()]
    if unknown:
        raise ValueError(f"skip rules: unknown rule {', '.join(unknown)}")
    pct = _number("percentile", fields["percentile"], 99.99)
    if not 0 < pct <= 100:
        raise ValueError(f"percentile: {pct:g} is not in (0, 100]")
    count = _number("count", fields["count"], 2)
    if count != int(count) or count < 1:
        raise ValueError(f"count: {fields['count']} must be a whole number, at least 1")
    if fields["method"] not in mdla_quant.METHODS:
        raise ValueError(f"method: unknown `{fields['method']}`")
    target = fields["target"].strip() or DEFAULT_TARGET
    quant = replace(  # what the form does not show (rounding, AdaRound, ...) is kept
        base.quant,
        method=fields["method"],
        percentile=pct,
        bias_correction=fields["bias"] == "yes",
        target=target,
    )
    # cpu tokens are checked against the graph when it compiles (a usage error names them)
    return replace(
        base,
        model=spec,
        weights=_weights(fields["weights"]),
        args=tuple(fields["args"].split()),
        contract=_contract(fields, base.contract),
        calib=fields["calib"].strip() or "auto",
        count=int(count),
        quant=quant,
        cpu=split_list(fields["cpu"]),
        target=target,
        device=fields["device"],
        skip_rules=rules,
        import_path=fields["import"],
    )


def _weights(text: str) -> str | None:
    path = text.strip()
    if path and not Path(path).is_file():
        raise ValueError(f"weights: `{path}` does not exist (a state-dict file)")
    return path or None


def _contract(fields: Mapping[str, str], base: Contract) -> Contract:
    """The input contract from the form's fields, checked as `compile`'s options are; labels
    left blank keep the ones already loaded."""

    def given(key: str) -> str | None:
        return fields[key].strip() or None

    labels = given("labels")
    try:
        contract = contract_from(
            given("shape"),
            given("preset"),
            given("mean"),
            given("std"),
            base.channels,
            base.resize,
            base.crop,
            Path(labels) if labels else None,
        )
    except mdla_compile.CompileError as exc:
        raise ValueError(str(exc)) from None
    return contract if labels else replace(contract, labels=base.labels)


def field_values(o: CompileOptions) -> dict[str, str]:
    """The text each form field starts with, for `o`."""
    c = o.contract

    def joined(values: tuple[float, ...] | None) -> str:
        return ",".join(f"{v:g}" for v in values) if values else ""

    return {
        "spec": o.spec,
        "weights": o.weights or "",
        "shape": ",".join(map(str, c.input_shape)) if c.input_shape else "",
        "preset": c.preset or "",
        "mean": joined(c.mean),
        "std": joined(c.std),
        "labels": "",
        "args": " ".join(o.args),
        "skip": " ".join(o.skip_rules),
        "cpu": ",".join(o.cpu),
        "percentile": f"{o.quant.percentile:g}",
        "calib": "" if o.calib == "auto" else o.calib_name,
        "count": str(o.count),
    }


INPUTS = (  # (field, label, placeholder): the form's text fields, in order
    ("spec", "model", "model spec or OUT.mdla"),
    ("weights", "weights", "state dict .pt (none: the model's own)"),
    ("shape", "input shape", "N,C,H,W (blank: the model's own, else 1,3,224,224)"),
    ("preset", "preset", "imagenet, tf, minus1to1, zero1 (blank: the model's)"),
    ("mean", "mean", "R,G,B on [0, 1]"),
    ("std", "std", "R,G,B on [0, 1]"),
    ("labels", "labels", "labels.txt, one name a line"),
    ("args", "args (--arg)", "key=value ... for a file.py:name factory"),
)
MORE_INPUTS = (
    ("skip", "skip rules", "rule names (none)"),
    ("cpu", "cpu (--cpu)", "LAYER_NORM,GELU features.7.*"),
)


class CompileForm(ModalScreen[CompileOptions | None]):
    """What `workbench compile` takes: the model and its input contract (weights, input shape,
    preset or mean/std, labels, --arg, the import path), target, device, skip rules, CPU
    partitions, method, percentile (only for the percentile method), bias correction,
    calibration source and count; enter compiles."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "submit", "Compile"),
    ]

    def __init__(self, options: CompileOptions, weights_hint: str | None = None) -> None:
        super().__init__()
        self.options, self.weights_hint = options, weights_hint

    def compose(self) -> ComposeResult:
        o, text = self.options, field_values(self.options)
        targets = sorted({*mdla_legalize.known_targets(), o.target})
        with Vertical(id="form"):
            yield Static("compile (enter or ctrl+s compiles, escape cancels)", id="form-title")
            with VerticalScroll(id="form-scroll"), Grid(id="form-grid"):
                yield from self.inputs(INPUTS, text)
                yield from select("import", "import", IMPORTS, o.import_path)
                yield from select("target", "target", targets, o.target)
                yield from select("device", "device", DEVICES, o.device)
                yield from self.inputs(MORE_INPUTS, text)
                yield from select("method", "method", mdla_quant.METHODS, o.quant.method)
                yield from self.inputs((("percentile", "percentile", ""),), text)
                bias = "yes" if o.quant.bias_correction else "no"
                yield from select("bias", "bias corr.", ("no", "yes"), bias)
                yield from self.inputs(
                    (("calib", "calibration", "samples, random or DIR (blank: auto)"),), text
                )
                yield Static("count", classes="label")
                yield Input(text["count"], id="f-count", type="integer")
            yield Static("", id="form-error")
            with Horizontal(id="form-buttons"):
                yield Button("Compile", id="f-ok", variant="primary")
                yield Button("Cancel", id="f-cancel")

    def inputs(
        self, rows: Sequence[tuple[str, str, str]], text: Mapping[str, str]
    ) -> Iterator[Widget]:
        labels = self.options.contract.labels
        for key, label, placeholder in rows:
            if key == "labels" and labels:
                placeholder = f"labels.txt (blank: keep the {len(labels)} loaded)"
            if key == "weights" and self.weights_hint:
                placeholder = self.weights_hint
            yield Static(label, classes="label")
            yield Input(text[key], placeholder=placeholder, id=f"f-{key}")

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
        fields = {i.id[2:]: i.value for i in self.query(Input) if i.id}
        fields |= {s.id[2:]: str(s.value) for s in self.query(Select) if s.id}
        return parse_options(fields, self.options)

    def action_submit(self) -> None:
        try:
            options = self.value()
        except (ValueError, mdla_compile.CompileError, mdla_quant.QuantError) as exc:
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


IMPORTS = tuple(p.value for p in ImportPathName)


def select(key: str, label: str, choices: Sequence[str], value: str) -> Iterator[Widget]:
    yield Static(label, classes="label")
    yield Select([(c, c) for c in choices], value=value, allow_blank=False, id=f"f-{key}")


class PathPrompt(ModalScreen[str | None]):
    """One path (save .mdla, export .tflite) or spec, maybe filled in; enter accepts, escape
    cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str, value: str = "") -> None:
        super().__init__()
        self.title_text, self.placeholder, self.value = title, placeholder, value

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt"):
            yield Static(self.title_text, id="prompt-title")
            yield Input(self.value, placeholder=self.placeholder, id="prompt-path")

    @on(Input.Submitted)
    def _done(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
