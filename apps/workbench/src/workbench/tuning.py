"""Calibration tuning scored on held-out inputs: the quantizer never sees what it is judged on.

    split = split_calibration("samples", source, count=4, held_out=2)   # 4 calibrate, 2 judge
    old = trial(source, device_graph, split, QuantConfig())              # the previous setting
    new = trial(source, device_graph, split, QuantConfig(method="mse"))  # the new one
    c = compare(new, old)          # per layer: cosine, SQNR, max |error| and their deltas
    c.new.agreement                # top-1 agreement with FP32 on the held-out inputs, Wilson CI
    c.new.pixel_agreement          # a class map's: mean per-pixel argmax agreement instead
    save(c, Path("net.mdla"))      # net.mdla, net.tuning.json, net.sqnr.png

Why held-out: a calibration setting scored on its own calibration inputs reads well by
construction (the ranges were fitted to those very activations; top-1 agreement is then close
to 100% whatever the setting). `split_calibration` takes `count + held_out` inputs from the
source and gives the quantizer only the first `count`; both settings of a comparison are
calibrated on the same inputs and scored on the same held-out ones.

Top-1 agreement is k of n held-out inputs whose INT8 argmax equals FP32's; with n this small
the interval matters more than the point, so it carries Wilson's 95% score interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import mdla_quant
from mdla_compile import Compiled, Source, calibration_inputs, check_output, quantize_graph
from mdla_compile.compiled import LayerProgress
from mdla_compile.inputs import input_files
from mdla_ir import Graph
from mdla_runtime.atomic import write_atomic
from workbench import images, pipeline, validation
from workbench.agreement import KindScore
from workbench.errors import USAGE, WorkbenchError
from workbench.held_out import Agreement, describe, measure
from workbench.output import dumps

Array = np.ndarray[Any, Any]
DEFAULT_ROUNDING = mdla_quant.QuantConfig().weight_rounding
SETTING_KEYS = (
    "method",
    "percentile",
    "rounding",
    "bias_correction",
    "equalize",
    "adaround",
    "reconstruction",
    "weight_scale",
    "weight_rounding",
)


@dataclass(frozen=True)
class Split:
    """Calibration inputs (the quantizer's) and held-out inputs (named; scoring only)."""

    source: str
    calibration: Sequence[list[Array]]
    held_out: tuple[tuple[str, list[Array]], ...]


def split_names(calib: str, count: int, held_out: int) -> list[str]:
    """The names of the `count + held_out` inputs a split of `calib` takes (checked before
    any compile: too few photos or files is a usage error)."""
    if held_out < 1:
        raise WorkbenchError(f"--held-out must be at least 1, got {held_out}", USAGE)
    total = count + held_out
    if calib == "random":
        return [f"random {i}" for i in range(total)]
    if calib == "samples":
        available = list(images.SAMPLES)
        if total > len(available):
            raise WorkbenchError(
                f"`samples` has {len(available)} photos; --count {count} + --held-out "
                f"{held_out} asks for {total}: lower one, or give --calib DIR",
                USAGE,
            )
        return available[:total]
    files = input_files(calib)
    if total > len(files):
        raise WorkbenchError(
            f"`{calib}` has {len(files)} inputs; --count {count} + --held-out {held_out} "
            f"asks for {total}",
            USAGE,
        )
    return [f.name for f in files[:total]]


def split_calibration(calib: str, source: Source, count: int, held_out: int) -> Split:
    """The first `count` inputs of `calib` (samples, random, a directory) to calibrate on and
    the next `held_out` to score on; disjoint by construction (distinct files or photos, or
    further draws of the same random stream). The first `count` are the very inputs
    `mdla_compile.compile` calibrates on with `calib` and `count`."""
    names = split_names(calib, count, held_out)
    drawn = calibration_inputs(calib, source, len(names))
    held = tuple((names[i], list(drawn[i])) for i in range(count, len(names)))
    return Split(calib, drawn[:count], held)  # a directory stays lazy (read on use)


@dataclass(frozen=True)
class Layer:
    """One tensor of the device graph, INT8 reference vs float over the held-out inputs."""

    tensor: str
    op: str
    kind: str
    cosine: float
    sqnr_db: float
    max_abs: float


@dataclass(frozen=True)
class Trial:
    """One calibration setting, calibrated on a split's calibration inputs and scored on its
    held-out inputs: `agreement` (top-1) for a classifier's first output, `pixel_agreement`
    (the mean share of pixels with FP32's argmax class) for a class map's; `kind` says which
    (`validation.graph_kinds`)."""

    label: str
    config: mdla_quant.QuantConfig
    compiled: Compiled
    layers: tuple[Layer, ...]
    agreement: Agreement | None
    output_cosine: float
    calibration_count: int
    held_out: tuple[str, ...]
    kind: str = validation.CLASSIFIER
    pixel_agreement: float | None = None
    kind_score: KindScore | None = None  # boxes, keypoints, raw: their agreement

    def metric(self) -> str:
        """The first output's agreement with FP32, as its kind measures it."""
        return describe(self.kind, self.agreement, self.pixel_agreement, self.kind_score)


def label(config: mdla_quant.QuantConfig) -> str:
    """`percentile 99.99 double`, `mse single +bias`, `minmax double +adaround 300 +block
    reconstruction`: the percentile only where it applies, each weight technique when on
    (layer reconstruction is AdaRound's default, so it is not said; the weight rounding when
    it is not the default's)."""
    parts = [config.method]
    if config.method == "percentile":
        parts.append(f"{config.percentile:g}")
    parts.append(config.rounding)
    parts += [
        name
        for name, on in (
            ("+bias", config.bias_correction),
            ("+equalize", config.equalize),
            (f"+adaround {config.adaround}", config.adaround),
            ("+block reconstruction", config.reconstruction == "block"),
            (f"+{config.weight_rounding} rounding", config.weight_rounding != DEFAULT_ROUNDING),
            (f"+{config.weight_scale} weight scale", config.weight_scale != "max"),
            (f"+int16 {len(config.a16)}", config.a16),
        )
        if on
    ]
    return " ".join(parts)


def parse_setting(text: str, base: mdla_quant.QuantConfig) -> mdla_quant.QuantConfig:
    """`method=mse,percentile=99.9,rounding=single,bias_correction=yes`,
    `adaround=300,reconstruction=block`: `base` with those fields replaced; an unknown key or
    a bad value (QuantConfig's own checks included: block reconstruction without AdaRound
    iterations) is a usage error."""
    fields: dict[str, Any] = base.as_dict()
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in SETTING_KEYS:
            raise WorkbenchError(
                f"setting `{item}`: expected key=value with key one of {', '.join(SETTING_KEYS)}",
                USAGE,
            )
        try:
            if key == "percentile":
                fields[key] = float(value)
            elif key == "adaround":
                fields[key] = int(value)
            elif key in ("bias_correction", "equalize"):
                if value.lower() not in ("yes", "no", "true", "false", "1", "0"):
                    raise ValueError(value)
                fields[key] = value.lower() in ("yes", "true", "1")
            else:
                fields[key] = value.strip()
        except ValueError:
            raise WorkbenchError(
                f"setting `{item}`: `{value}` is not a {key} value", USAGE
            ) from None
    try:
        return mdla_quant.QuantConfig(**fields)
    except mdla_quant.QuantError as exc:
        raise WorkbenchError(f"setting `{text}`: {exc}", USAGE) from None


def setting_of_manifest(path: str | Path, base: mdla_quant.QuantConfig) -> mdla_quant.QuantConfig:
    """The calibration setting a compiled .mdla records (re-run on this split to compare)."""
    quant = pipeline.load_manifest(path).provenance.quant
    if quant is None:
        raise WorkbenchError(f"`{path}` records no quantization setting")
    fields = {k: getattr(quant, k) for k in SETTING_KEYS}
    return mdla_quant.QuantConfig(**{**base.as_dict(), **fields})


def trial(
    source: Source,
    device_graph: Graph,
    split: Split,
    config: mdla_quant.QuantConfig,
    progress: Callable[[int], None] = lambda _n: None,
    layer_progress: LayerProgress | None = None,
    output_kinds: Sequence[str] = (),
) -> Trial:
    """Quantize on `split.calibration` only, then score on `split.held_out` only.
    `layer_progress(i, n, name)`: AdaRound's layers (and blocks, with block reconstruction);
    `output_kinds`: the `--output-kind` values the compile took."""
    compiled = quantize_graph(
        source,
        device_graph,
        split.calibration,
        config,
        progress=lambda n, _s: progress(n),
        layer_progress=layer_progress,
        output_kinds=output_kinds,
    )
    return score(compiled, split)


def score(compiled: Compiled, split: Split) -> Trial:
    """`compiled` (calibrated on `split.calibration` only) scored on `split.held_out`."""
    held = [xs for _, xs in split.held_out]
    report = mdla_quant.compare(compiled.device_graph, compiled.qgraph, held)
    layers = tuple(
        Layer(t.name, t.op, t.kind, t.cosine, t.sqnr_db, t.max_abs) for t in report.tensors
    )
    got = measure(compiled, held)
    return Trial(
        label(compiled.config),
        compiled.config,
        compiled,
        layers,
        got.agreement,
        got.cosine,
        len(split.calibration),
        tuple(name for name, _ in split.held_out),
        got.kind,
        got.pixel_agreement,
        got.kind_score,
    )


@dataclass(frozen=True)
class Comparison:
    """A new setting against the previous one (None: nothing to compare with yet)."""

    new: Trial
    previous: Trial | None

    def deltas(self) -> list[dict[str, Any]]:
        """Per tensor: the new cosine, SQNR and max |error| and each one's change against the
        previous setting (None where the previous setting has no such tensor)."""
        old = {t.tensor: t for t in self.previous.layers} if self.previous else {}
        rows = []
        for t in self.new.layers:
            p = old.get(t.tensor)
            rows.append(
                {
                    "tensor": t.tensor,
                    "op": t.op,
                    "kind": t.kind,
                    "cosine": t.cosine,
                    "sqnr_db": t.sqnr_db,
                    "max_abs_error": t.max_abs,
                    "delta_cosine": None if p is None else t.cosine - p.cosine,
                    "delta_sqnr_db": None if p is None else _db_delta(t.sqnr_db, p.sqnr_db),
                    "delta_max_abs_error": None if p is None else t.max_abs - p.max_abs,
                }
            )
        return rows


def _db_delta(new: float, old: float) -> float:
    """new - old in dB; inf - inf (both exact) is 0, not nan."""
    return 0.0 if new == old else new - old


def compare(new: Trial, previous: Trial | None) -> Comparison:
    return Comparison(new, previous)


def trial_doc(t: Trial) -> dict[str, Any]:
    a = t.agreement
    finite = [x.sqnr_db for x in t.layers if math.isfinite(x.sqnr_db)]
    return {
        "setting": label(t.config),
        "config": {k: getattr(t.config, k) for k in SETTING_KEYS},
        "top1_agreement": None
        if a is None
        else {"same": a.same, "n": a.n, "rate": a.rate, "ci95": list(a.interval)},
        "output_kind": t.kind,
        "pixel_agreement": t.pixel_agreement,
        "kind_agreement": None if t.kind_score is None else t.kind_score.doc(),
        "output_cosine": t.output_cosine,
        "mean_sqnr_db": float(np.mean(finite)) if finite else math.inf,
        "worst_sqnr_db": min((x.sqnr_db for x in t.layers), default=math.inf),
    }


def comparison_doc(c: Comparison) -> dict[str, Any]:
    """The comparison as plain data: what `tune --json` prints and `save` writes."""
    return {
        "calibration": {"count": c.new.calibration_count},
        "held_out": {"count": len(c.new.held_out), "inputs": list(c.new.held_out)},
        "new": trial_doc(c.new),
        "previous": None if c.previous is None else trial_doc(c.previous),
        "layers": c.deltas(),
    }


def save(c: Comparison, out: str | Path) -> dict[str, Path]:
    """Write the new setting's manifest `out`, `<stem>.tuning.json` (the comparison) and
    `<stem>.sqnr.png` (per-layer SQNR of both settings) beside it."""
    from workbench.tuning_plot import sqnr_png

    path = Path(out)
    check_output(path, ".mdla")
    paths = {
        "manifest": path,
        "json": path.with_suffix(".tuning.json"),
        "plot": path.with_suffix(".sqnr.png"),
    }
    png = sqnr_png(c)
    doc = {**comparison_doc(c), "manifest": str(path), "plot": str(paths["plot"])}
    c.new.compiled.save(path)
    write_atomic(paths["json"], (dumps(doc) + "\n").encode())
    write_atomic(paths["plot"], png)
    return paths
