"""The Calibrate screen's reconstruction select (issue 20's block reconstruction): block with
AdaRound iterations reaches the QuantConfig the screen quantizes with, the label, the saved
manifest and .tuning.json; block without iterations is refused with QuantConfig's own message,
as the form refuses its other bad values, and nothing is re-quantized."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select

import mdla_quant
import mdla_runtime
from mdla_quant.sequential import WEIGHTED_KINDS
from tests.workbench.tui_pilot import applied, calibrate, installed, sync, text, tiny
from workbench import pipeline, tuning

__all__ = ["tiny"]  # the module-scoped fixture


@sync
async def test_block_reconstruction_is_quantized_with_and_saved(
    tmp_path: Path, tiny: pipeline.Compiled, monkeypatch: pytest.MonkeyPatch
) -> None:
    fitted: list[str] = []  # AdaRound's layers, as the screen's progress line hears of them
    real: Any = tuning.trial

    def spy(*args: Any, **kwargs: Any) -> Any:  # kwargs: the open model's output kinds
        *rest, layers = args

        def heard(i: int, n: int, name: str) -> None:
            fitted.append(name)
            layers(i, n, name)

        return real(*rest, heard, **kwargs)

    monkeypatch.setattr(tuning, "trial", spy)
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await calibrate(pilot, app)
        select = screen.query_one("#reconstruction", Select)
        assert select.value == "layer"  # AdaRound's default
        screen.query_one("#adaround", Input).value = "3"
        select.value = "block"
        label = "percentile 99.99 double +adaround 3 +block reconstruction"
        c, quant = await applied(pilot, app, screen, label)
        assert (c.new.config.adaround, c.new.config.reconstruction) == (3, "block")
        assert quant.reconstruction == "block"
        weighted = [op.name for op in tiny.device_graph.ops if op.kind.name in WEIGHTED_KINDS]
        assert fitted == [*weighted, "done"]  # TINY has no inverted-residual block
        out = tmp_path / "block.mdla"
        screen.query_one("#save", Input).value = str(out)
        await pilot.press("k")
        saved = mdla_runtime.load(out).provenance.quant
        assert saved is not None
        assert (saved.adaround, saved.reconstruction) == (3, "block")
        doc = json.loads(out.with_suffix(".tuning.json").read_text())
        assert doc["new"]["setting"] == label
        assert doc["new"]["config"]["reconstruction"] == "block"


@sync
async def test_block_without_adaround_is_refused_with_quantconfigs_message(
    tiny: pipeline.Compiled,
) -> None:
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await calibrate(pilot, app)
        screen.query_one("#reconstruction", Select).value = "block"  # adaround iters: 0
        await pilot.press("a")
        await pilot.pause()
        with pytest.raises(mdla_quant.QuantError) as err:
            mdla_quant.QuantConfig(reconstruction="block")
        expected = str(err.value)
        errors = [n for n in app._notifications if n.severity == "error"]
        assert [n.message for n in errors] == [expected]
        assert "adaround > 0" in expected
        assert text(app, "#result") == "open a model, choose settings, press a"  # no worker ran
        assert screen.comparison is None
