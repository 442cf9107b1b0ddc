"""A compile's events (`mdla_compile.events`) as lines of a `steps()` display on stderr.

    with steps() as s:
        compiled = mdla_compile.compile(options, on_event=compile_progress(s))

import and legalize: a spinner each; quantize: a bar over the calibration inputs, and
AdaRound's layers when it runs; notes on stderr; with `--cpu` the placement table on stdout
and its warnings on stderr, as `check --cpu` prints them.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from mdla_compile import events as ev
from mdla_legalize import Placement
from workbench import placement
from workbench.output import Steps


def _placed(placed: Placement, table: bool) -> None:
    """The placement table, or without it what `--cpu auto` chose (never silent)."""
    if table:
        placement.report(placed)
        return
    for line in placed.notes:
        typer.echo(line, err=True)


def compile_progress(s: Steps, prefix: str = "", show_placement: bool = True) -> ev.OnEvent:
    """`on_event` for `mdla_compile.compile` drawing on `s` (`prefix` names a trial;
    `show_placement=False` leaves the --cpu table out: `bisect` prints its own report)."""
    done: list[Callable[[], None]] = []
    tick: list[Callable[[int], None]] = []
    layers = s.layers(f"{prefix}adaround")

    def on_event(event: ev.Event) -> None:
        match event:
            case ev.StageStarted(ev.Stage.QUANTIZE, _detail, total):
                tick.append(s.bar(f"{prefix}calibrating", total=total or 0))
            case ev.StageStarted(stage, detail, _total):
                what = f"importing {detail}" if stage == ev.Stage.IMPORT else "legalizing"
                done.append(s.begin(f"{prefix}{what}"))
            case ev.StageFinished(stage, _seconds) if stage != ev.Stage.QUANTIZE and done:
                done.pop()()
            case ev.CalibrationTick(n, _total) if tick:
                tick[-1](n)
            case ev.AdaRoundLayer(i, n, name):
                layers(i, n, name)
            case ev.Note(text):
                typer.echo(text, err=True)
            case ev.Placed(placed):
                _placed(placed, show_placement)

    return on_event
