"""The Calibrate screen's int16 field (`compile --a16`'s spelling): `auto:BUDGET` reaches the
QuantConfig the screen quantizes with and the manifest it keeps, chosen within the budget; a
malformed budget is refused with --a16's own message and nothing is re-quantized."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

import mdla_runtime
from mdla_compile.report import a16_share
from mdla_quant import QuantConfig, quantize
from tests.quant.test_quantize import net, samples
from tests.workbench.tui_pilot import applied, calibrate, installed, sync, text, tiny
from workbench import pipeline
from workbench.tui.state import describe, rows_from_graph

__all__ = ["tiny"]  # the module-scoped fixture


@sync
async def test_auto_int16_is_chosen_within_the_budget_and_kept(
    tmp_path: Path, tiny: pipeline.Compiled
) -> None:
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await calibrate(pilot, app)
        screen.query_one("#a16", Input).value = "auto:30%"
        c, quant = await applied(pilot, app, screen)
        chosen = c.new.config.a16
        assert a16_share(tiny.device_graph, chosen) <= 0.30
        assert quant.a16 == chosen
        out = tmp_path / "a16.mdla"
        screen.query_one("#save", Input).value = str(out)
        await pilot.press("k")
        saved = mdla_runtime.load(out).provenance.quant
        assert saved is not None
        assert saved.a16 == chosen


@sync
async def test_a_bad_budget_is_refused_before_any_work(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await calibrate(pilot, app)
        screen.query_one("#a16", Input).value = "auto:200%"
        await pilot.press("a")
        await pilot.pause()
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert len(errors) == 1
        assert "not a share of activation bytes" in errors[0]
        assert text(app, "#result") == "open a model, choose settings, press a"
        assert screen.comparison is None


def test_an_int16_row_says_why_it_is_int16() -> None:
    """The op table's detail pane gives the recorded gain and request, as `explain` does."""
    config = QuantConfig(a16=("c2", "ap"), a16_gain_db=(0.5, 0.125), a16_mode="auto:10%")
    qgraph = quantize(net(), samples(4), config)
    rows = {r.name: r for r in rows_from_graph(qgraph, qgraph, target="mdla3.5")}
    assert rows["c2"].int16 == "+0.50 dB output SQNR (measured by --a16 auto:10%)"
    assert "int16 (16x8): +0.50 dB output SQNR" in describe(rows["c2"])
    assert rows["c"].int16 == ""
    assert "int16" not in describe(rows["c"])
