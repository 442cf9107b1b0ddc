"""SVG snapshots of every TUI screen (the five modes, help, the compile form) at 80×24 and
120×40, with the tiny model open: one file per screen per size under snapshots/."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from tests.workbench.conftest import TINY
from tests.workbench.snapshots import assert_snapshot
from tests.workbench.tui_pilot import installed, settle, sync, text, tiny, wait_for
from workbench import pipeline
from workbench.tui.state import tui_options

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(80, 24), (120, 40)]
__all__ = ["tiny"]  # the module-scoped fixture

SNAPSHOT_KEYS = {
    "graph": ["1"],
    "bisect": ["2"],
    "calibrate": ["3"],
    "witness": ["4"],
    "run": ["5"],
    "help": ["question_mark"],
    "compile": ["c"],
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", list(SNAPSHOT_KEYS))
@sync
async def test_snapshot(name: str, size: tuple[int, int], tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    # the compile form shows the spec: spelled from the repo root, so the rendered widths do
    # not depend on where the checkout lives (a clone under /tmp is longer than /work/main)
    app.session.spec = str(Path(TINY).relative_to(ROOT))
    app.session.options = tui_options(app.session.spec)
    async with app.run_test(size=size) as pilot:
        await pilot.press(*SNAPSHOT_KEYS[name])
        if name == "witness":
            await wait_for(pilot, lambda: "(not a phone's APU)" in text(app, "#counter"), 5)
        for box in app.screen.query(Input):
            box.cursor_blink = False  # a focused field's cursor blinks: hold it still
        await settle(pilot, app)
        assert_snapshot(app, f"{name}-{size[0]}x{size[1]}")
