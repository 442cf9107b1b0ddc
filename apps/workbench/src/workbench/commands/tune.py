"""`workbench tune`: a calibration setting against the previous one, scored on held-out inputs
(`workbench.tuning`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

import mdla_compile
import mdla_quant
from workbench import tuning
from workbench.commands.binding import options
from workbench.commands.options import CompileFlags, Debug, JsonOut, console
from workbench.errors import interrupt_guard, reported
from workbench.output import json_output, steps
from workbench.progress import compile_progress

EPILOG = """Examples:

  workbench tune efficientnet_lite0 --method mse            # vs the default, 4 + 2 photos

  workbench tune resnet18 --weights r18.pt --calib photos/ --count 32 --held-out 64 \
      --method entropy --previous lite0.mdla -o r18.mdla    # saves .mdla, .tuning.json, .png

  workbench tune my_net.py:build --calib random --bias-correction \
      --previous method=percentile,percentile=99.9

  workbench tune efficientnet_lite0 --adaround 300 --reconstruction block \
      --previous adaround=300    # block vs layer
"""


def db(value: float | None) -> str:
    if value is None:
        return "-"
    return ("inf" if value > 0 else "-inf") if math.isinf(value) else f"{value:.1f}"


def delta(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


@options(count=4)
def tune_command(
    model: Annotated[str, typer.Argument(help="Model spec (compiled here, twice).")],
    flags: CompileFlags,
    held_out: Annotated[
        int,
        typer.Option(
            "--held-out",
            min=1,
            help="Further inputs of --calib, never calibrated on: the score is theirs.",
        ),
    ] = 2,
    previous: Annotated[
        str,
        typer.Option(
            "--previous",
            help="The setting to compare with: a compiled PREV.mdla (its recorded setting, "
            "re-run on this split) or key=value,... over the defaults (method, percentile, "
            "rounding, bias_correction, equalize, adaround, reconstruction); `none` for no "
            "comparison.",
        ),
    ] = "method=percentile",
    out: Annotated[
        Path | None,
        typer.Option(
            "-o", "--out", help="Save the new setting: OUT.mdla, OUT.tuning.json, OUT.sqnr.png."
        ),
    ] = None,
    as_json: JsonOut = False,
    debug: Debug = False,
) -> None:
    """Quantize MODEL with a new calibration setting and with the previous one, both on the
    same --count calibration inputs, and score both on --held-out further inputs the quantizer
    never saw: per layer cosine, SQNR and max |error| with their deltas, and agreement with
    FP32: top-1 with its 95% (Wilson) interval for a classifier, per-pixel argmax agreement
    for a class map. With -o: the new .mdla, the comparison as JSON
    and a PNG of per-layer SQNR for the two settings."""
    with reported(debug), interrupt_guard() as interrupted, json_output(as_json) as emit:
        if out is not None:
            mdla_compile.check_output(out, ".mdla")
        opts = flags.options(model)
        old_config = _previous(previous, mdla_quant.QuantConfig(target=flags.target))
        tuning.split_names(flags.calib, flags.count, held_out)  # too few inputs: before work
        with steps() as s:
            compiled = mdla_compile.compile(opts, on_event=compile_progress(s, "new: "))
            split = tuning.split_calibration(flags.calib, compiled.source, flags.count, held_out)
            new = tuning.score(compiled, split)
            old = None
            if old_config is not None:
                tick = s.bar(f"previous: {tuning.label(old_config)}", total=flags.count)
                layers = s.layers("previous: adaround")
                old = tuning.trial(
                    compiled.source,
                    compiled.device_graph,
                    split,
                    old_config,
                    tick,
                    layers,
                    output_kinds=opts.output_kinds,
                )
        comparison = tuning.compare(new, old)
        show(comparison, model)
        doc = tuning.comparison_doc(comparison)
        if out is not None:
            interrupted()
            with steps() as s, s.step(f"saving {out}"):
                paths = tuning.save(comparison, out)
            for what, path in paths.items():
                console().print(f"wrote {what}: {path}", markup=False)
            doc["saved"] = {k: str(v) for k, v in paths.items()}
        emit(doc)


def _previous(previous: str, base: mdla_quant.QuantConfig) -> mdla_quant.QuantConfig | None:
    """The setting to compare with: none, a compiled .mdla's, or key=value,... over `base`."""
    if previous == "none":
        return None
    if previous.endswith(".mdla"):
        return tuning.setting_of_manifest(previous, base)
    return tuning.parse_setting(previous, base)


def show(c: tuning.Comparison, model: str) -> None:
    con = console()
    held = ", ".join(c.new.held_out)
    con.print(
        f"{model}: calibrated on {c.new.calibration_count} input(s), scored on "
        f"{len(c.new.held_out)} held-out input(s) the quantizer never saw ({held})",
        markup=False,
    )
    table = Table(
        title=f"per layer, {c.new.label}" + (f" vs {c.previous.label}" if c.previous else "")
    )
    heads = ("tensor", "op", "cosine", "Δ", "SQNR dB", "Δ dB", "max |err|", "Δ")
    rows = [
        (
            r["tensor"],
            r["kind"],
            f"{r['cosine']:.5f}",
            delta(r["delta_cosine"], "{:+.1e}"),
            db(r["sqnr_db"]),
            delta(r["delta_sqnr_db"], "{:+.1f}"),
            f"{r['max_abs_error']:.4g}",
            delta(r["delta_max_abs_error"], "{:+.3g}"),
        )
        for r in c.deltas()
    ]
    for i, head in enumerate(heads):
        if i < 2:  # names truncate when the terminal is narrow ...
            table.add_column(head, no_wrap=True, overflow="ellipsis", min_width=6)
        else:  # ... numbers never: each column keeps its widest cell
            width = max(len(head), *(len(r[i]) for r in rows)) if rows else len(head)
            table.add_column(head, justify="right", no_wrap=True, min_width=width)
    for row in rows:
        table.add_row(*row)
    con.print(table)
    for which, t in (("new", c.new), ("previous", c.previous)):
        if t is None:
            continue
        con.print(
            f"{which} ({t.label}): {t.metric()}, output cosine {t.output_cosine:.5f}",
            markup=False,
        )
