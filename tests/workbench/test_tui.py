"""The TUI driven by keys with Textual's Pilot: each screen's state and widgets, failing workers
as notifications, q, the 80×24 minimum, and SVG snapshots at 100×32."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Log, Select, Sparkline, Static

from tests.workbench.conftest import TINY
from tests.workbench.snapshots import assert_snapshot
from workbench.tui.app import WorkbenchApp
from workbench.tui.run import RunScreen

SIZE = (100, 32)


def sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async Pilot test with asyncio.run (no pytest async plugin needed)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


async def wait_for(pilot: Pilot[None], done: Callable[[], bool], seconds: float = 60) -> None:
    for _ in range(int(seconds / 0.05)):
        if done():
            await pilot.pause()
            return
        await pilot.pause(0.05)
    raise AssertionError("timed out waiting for the TUI")


async def settle(pilot: Pilot[None], app: WorkbenchApp, seconds: float = 10) -> None:
    """Wait until two screenshots 0.1 s apart are the same: a DataTable sizes its columns and
    scrollbars over a few refreshes after its rows arrive (a snapshot taken in between flaked)."""
    last = ""
    for _ in range(int(seconds / 0.1)):
        await pilot.pause(0.1)
        now = app.export_screenshot()
        if now == last:
            return
        last = now
    raise AssertionError("the screen did not settle")


def text(app: WorkbenchApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def opened(spec: str = TINY, **kw: list[str]) -> WorkbenchApp:
    app = WorkbenchApp(None)
    app.session.open(spec, **kw)  # what the Graph screen's worker does, done up front
    return app


@sync
async def test_graph_opens_searches_and_details() -> None:
    app = WorkbenchApp(TINY)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one("#ops", DataTable)
        await wait_for(pilot, lambda: table.row_count == 8)
        assert "8/8 ops on mtk-mdla" in text(app, "#summary")
        await settle(pilot, app)
        assert_snapshot(app, "graph")
        await pilot.press("down", "down")
        assert "#2 stem.2.logistic (LOGISTIC)" in text(app, "#detail")
        assert "scale 0.00390625, zero point -128" in text(app, "#detail")  # fixed 1/256
        await pilot.press("slash", *"conv")
        assert table.row_count == 3  # CONV_2D ×2 and the DEPTHWISE_CONV_2D
        await pilot.press("enter")
        assert isinstance(app.focused, DataTable)


@sync
async def test_bisect_selects_the_failing_op_in_graph() -> None:
    app = opened(skip_rules=["conv_pad_to_pad_valid"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        assert app.current_mode == "bisect"
        await pilot.press("s")
        await wait_for(pilot, lambda: app.current_mode == "graph")
        assert app.session.selected == 0
        table = app.screen.query_one("#ops", DataTable)
        assert table.cursor_row == 0
        assert "fix: rule conv_pad_to_pad_valid" in text(app, "#detail")
        await pilot.press("2")
        log = "\n".join(app.screen.query_one(Log).lines)
        assert "ops[:7]: 0/7 supported -> does not map" in log
        assert "first unmappable op: #0 stem.0 (CONV_2D)" in log
        assert_snapshot(app, "bisect")


@sync
async def test_calibrate_requantizes_shows_delta_and_saves(tmp_path: Path) -> None:
    app = opened()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "a")
        await wait_for(pilot, lambda: "mean SQNR" in text(app, "#result"))
        first = text(app, "#result")
        assert "percentile p99.99 double ×4" in first
        assert "top-1 agreement" in first
        assert app.session.sqnr
        assert all(v > 20 for v in app.session.sqnr.values())
        assert app.session.rows[0].sqnr_db is not None  # the Graph view gets the SQNR column
        assert_snapshot(app, "calibrate")
        app.screen.query_one("#method", Select).value = "minmax"
        await pilot.press("a")
        await wait_for(pilot, lambda: "vs percentile" in text(app, "#result"))
        assert "minmax p99.99 double ×4" in text(app, "#result")
        out = tmp_path / "kept.mdla"
        app.screen.query_one("#save", Input).value = str(out)
        await pilot.press("k")
        assert out.read_bytes()[:5] == b"\x89MDLA"


@sync
async def test_calibrate_weight_techniques_reach_the_manifest(tmp_path: Path) -> None:
    app = opened()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        app.screen.query_one("#bias", Select).value = "yes"
        app.screen.query_one("#equalize", Select).value = "yes"
        app.screen.query_one("#adaround", Input).value = "5"
        await pilot.press("a")
        await wait_for(pilot, lambda: "mean SQNR" in text(app, "#result"))
        assert "percentile p99.99 double ×4 +bias +eq +ada5" in text(app, "#result")
        compiled = app.session.compiled
        assert compiled is not None
        quant = compiled.qgraph.provenance.quant
        assert quant is not None
        assert (quant.bias_correction, quant.equalize, quant.adaround) == (True, True, 5)
        app.screen.query_one("#adaround", Input).value = "x"
        await pilot.press("a")
        await pilot.pause()
        assert any("adaround iters must be numbers" in n.message for n in app._notifications)


@sync
async def test_witness_protocol_on_the_emulator_counter() -> None:
    app = opened()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        app.screen.query_one("#idle", Input).value = "0.2"
        app.screen.query_one("#runs", Input).value = "300"
        await pilot.press("s")
        await wait_for(pilot, lambda: "verdict:" in text(app, "#verdict"))
        verdict = text(app, "#verdict")
        assert "verdict: witnessed" in verdict
        assert "the emulator's fake runtime-PM node" in verdict
        await wait_for(pilot, lambda: max(app.screen.query_one(Sparkline).data or [0]) > 0, 5)


@sync
async def test_run_latency_and_predictions() -> None:
    app = opened()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        assert_snapshot(app, "run")
        app.screen.query_one("#runs", Input).value = "4"
        await pilot.press("s")
        await wait_for(pilot, lambda: "4 run(s) on mtk-mdla" in text(app, "#latency"))
        assert len(app.screen.query_one(Sparkline).data or []) == 4
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_for(pilot, lambda: "random" in screen.predictions)
        assert screen.predictions["random"].count(",") == 4  # five classes


@sync
async def test_a_failing_worker_is_a_notification() -> None:
    app = WorkbenchApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o", *"no_such_net", "enter")
        await wait_for(pilot, lambda: bool(app._notifications))  # Textual's toast list
        (note,) = list(app._notifications)
        assert note.severity == "error"
        assert "unknown model `no_such_net`" in note.message
        assert app.is_running
        await pilot.press("2", "s")  # nothing open: a warning, not a crash
        assert app.current_mode == "bisect"
        assert app.is_running


@sync
async def test_q_types_in_fields_and_quits_elsewhere() -> None:
    app = WorkbenchApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o", *"sq")
        assert app.screen.query_one("#open", Input).value == "sq"
        await pilot.press("escape", "3", "q")
        await pilot.pause()
        assert not app.is_running


@pytest.mark.parametrize("mode", ["graph", "bisect", "calibrate", "witness", "run"])
@sync
async def test_every_screen_renders_at_80x24(mode: str) -> None:
    app = WorkbenchApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(str(["graph", "bisect", "calibrate", "witness", "run"].index(mode) + 1))
        assert app.current_mode == mode
        svg = app.export_screenshot()
        assert "Quit" in svg
        assert "Graph" in svg
