"""The TUI as it is used over SSH on a phone, at 80x24: on the rendered screen every number is
whole (names are shortened and columns dropped instead), rows are named by op as the Graph
screen names them, and a sparkline shows nothing until something was measured."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from tests.workbench.snapshots import screen_text
from tests.workbench.test_tui import fake_trial
from tests.workbench.tui_pilot import calibrate, installed, settle, sync, tiny
from workbench import pipeline, tuning
from workbench.tui import spark
from workbench.tui.witness import WitnessScreen

__all__ = ["tiny"]  # the module-scoped fixture
BARS = set(spark.EIGHTHS.strip())
LONG = "features.12.block.2.depthwise.conv"


def _layer(cosine: float, db: float, max_abs: float) -> tuning.Trial:
    layer = tuning.Layer("features_12_block_2_dw", LONG, "CONV_2D", cosine, db, max_abs)
    return dataclasses.replace(fake_trial("x", 0.0), layers=(layer,))


def _row(shown: str, name: str) -> list[str]:
    return next(line for line in shown.splitlines() if name in line).split()


@sync
async def test_calibrate_numbers_whole_and_op_names_at_80x24(tiny: pipeline.Compiled) -> None:
    """The widest cells a bad setting gives (a negative cosine, SQNR under -100 dB, an error
    over 10^4) against a previous setting; the op's long name keeps its end."""
    bad, previous = _layer(-0.1234, -123.4, 12345.0), _layer(-1.0, 36.6, 0.1)
    app = installed(tiny)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await calibrate(pilot, app)
        screen.show(tuning.compare(bad, previous))
        await settle(pilot, app)
        row = _row(screen_text(app), "depthwise.conv")
        assert row[0].startswith("…")
        assert row[0].endswith(".2.depthwise.conv")
        assert row[1:7] == ["-0.1234", "+8.8e-01", "-123.4", "-160.0", "1.23e+04", "+1.2e+04"]
        assert "features_12_block_2_dw" not in screen_text(app)  # the tensor: no room at 80
        await pilot.resize_terminal(56, 24)  # narrower: columns go, the numbers left stay whole
        await settle(pilot, app)
        row = _row(screen_text(app), "wise.conv")
        assert row[0].startswith("…")
        assert row[1:5] == ["-0.1234", "-123.4", "-160.0", "1.23e+04"]  # deltas of cos, max go
        assert "Δcos" not in screen_text(app)


@sync
async def test_graph_keeps_the_end_of_a_long_op_name_at_80x24(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    rows = app.session.rows
    app.session.rows = [dataclasses.replace(r, name=f"{LONG}.{r.index}") for r in rows]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        shown = screen_text(app)
    for r in rows:
        line = _row(shown, f"depthwise.conv.{r.index}")
        assert line[1].startswith("…")
        assert r.scale is not None
        assert f"{r.scale:.3g}/{r.zero_point}" in line  # scale/zero point whole


@sync
async def test_witness_sparkline_is_empty_until_measured_and_says_idle(
    tiny: pipeline.Compiled,
) -> None:
    app = installed(tiny)
    app.session.counter = lambda: None  # type: ignore[method-assign]  # readings: the test's
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        screen = app.screen
        assert isinstance(screen, WitnessScreen)
        await settle(pilot, app)
        shown = screen_text(app)
        assert "counter growth per 0.5 s tick: no readings yet" in shown
        assert not BARS & set(shown.split("\n", 2)[2])  # the bar's screen list has none
        screen.show_reading("the test's node", SimpleNamespace(active_ms=None, status=None))
        await settle(pilot, app)
        shown = screen_text(app)
        assert "no reading yet (the emulator's node is filled by its first run)" in shown
        assert "None" not in shown
        for ms in (100, 100, 100):  # a counter that does not grow: idle, no bars
            screen.show_reading("the test's node", SimpleNamespace(active_ms=ms, status="ok"))
        await settle(pilot, app)
        shown = screen_text(app)
        assert "growth per 0.5 s tick, last 2: now 0 ms, none (idle)" in shown
        assert not BARS & set(shown.split("\n", 2)[2])
        screen.show_reading("the test's node", SimpleNamespace(active_ms=140, status="active"))
        await settle(pilot, app)
        shown = screen_text(app)
        assert "last 3: now 40 ms, max 40 ms" in shown
        assert [line.strip() for line in shown.splitlines() if BARS & set(line)][-3:] == [
            "█",
            "█",
            "█",
        ]  # two blank columns (idle ticks), then the growth at full height


@sync
async def test_run_sparkline_is_empty_before_a_run(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        await settle(pilot, app)
        shown = screen_text(app)
    assert "latency per run: none yet" in shown
    assert not BARS & set(shown.split("\n", 2)[2])


def test_spark_scales_from_zero_and_draws_no_bar_for_zero() -> None:
    assert spark.columns([], 10, 3) == ["", "", ""]
    assert spark.columns([0, 0], 10, 1) == ["  "]
    assert spark.columns([10, 11], 10, 1) == ["▇█"]  # steady: not min-scaled into a cliff
    assert spark.columns([0.01, 100], 10, 1) == ["▁█"]  # above zero: at least an eighth
    assert spark.columns([5, 10], 10, 2) == [" █", "██"]
    assert spark.columns(list(range(1, 21)), 4, 1) == ["▇▇██"]  # the newest `width` values
