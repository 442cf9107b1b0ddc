"""The Calibrate screen's weight rounding select (`compile --weight-rounding`): it offers every
rounding the quantizer has, starts at the quantizer's default, fits 80 columns, and the one
chosen reaches the QuantConfig the screen quantizes with, its label and the recorded quant."""

from __future__ import annotations

from textual.widgets import Select

import mdla_quant
from tests.workbench.snapshots import screen_text
from tests.workbench.tui_pilot import applied, calibrate, installed, settle, sync, tiny
from workbench import pipeline

__all__ = ["tiny"]  # the module-scoped fixture


@sync
async def test_weight_rounding_is_offered_and_quantized_with(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await calibrate(pilot, app)
        select = screen.query_one("#weight-rounding", Select)
        assert select.value == mdla_quant.QuantConfig().weight_rounding
        assert [v for _, v in select._options] == list(mdla_quant.WEIGHT_ROUNDINGS)
        await settle(pilot, app)
        line = next(r for r in screen_text(app).splitlines() if "w. rounding" in r)
        assert f"w. rounding {select.value}" in " ".join(line.split())  # whole at 80 columns
        select.value = "weighted"
        label = "percentile 99.99 double +weighted rounding"
        c, quant = await applied(pilot, app, screen, label)
        assert c.new.config.weight_rounding == "weighted"
        assert quant.weight_rounding == "weighted"
