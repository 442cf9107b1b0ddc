"""The Calibrate screen's bias-correction toggle reaches the quantizer (issue 21): the same
method on the same split, without then with it, gives another int8 graph, labelled `+bias`,
and the comparison is against the run without."""

from __future__ import annotations

from textual.widgets import Select

import mdla_runtime
from tests.workbench.tui_pilot import installed, sync, text, tiny, wait_for
from workbench import pipeline
from workbench.tui.calibrate import CalibrateScreen

__all__ = ["tiny"]  # the module-scoped fixture


@sync
async def test_bias_correction_toggle_requantizes_with_it(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3", "a")
        await wait_for(pilot, lambda: "held-out" in text(app, "#result"))
        app.screen.query_one("#bias", Select).value = "yes"
        await pilot.press("a")
        await wait_for(pilot, lambda: "vs percentile 99.99 double:" in text(app, "#result"))
        assert "percentile 99.99 double +bias: top-1 agreement" in text(app, "#result")
        screen = app.screen
        assert isinstance(screen, CalibrateScreen)
        c = screen.comparison
        assert c is not None
        assert c.previous is not None
        assert (c.previous.config.bias_correction, c.new.config.bias_correction) == (False, True)
        before = mdla_runtime.to_bytes(c.previous.compiled.qgraph)
        assert mdla_runtime.to_bytes(c.new.compiled.qgraph) != before  # the biases moved
