"""Helpers for the Pilot tests of the TUI (test_tui, test_tui_snapshots): async tests without
a plugin, waiting on the app, a settled screen, and TINY compiled once per module."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from mdla_ir import QuantRecord
from tests.workbench.conftest import TINY
from workbench import pipeline, tuning
from workbench.tui.app import WorkbenchApp
from workbench.tui.calibrate import CalibrateScreen
from workbench.tui.state import Session, tui_options


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


@functools.cache
def compiled_tiny() -> pipeline.Compiled:
    """TINY compiled with the TUI's defaults, once per process (both test files share it)."""
    session = Session()
    session.compile(tui_options(TINY))
    assert session.compiled is not None
    session.close()
    return session.compiled


@pytest.fixture(scope="module")
def tiny() -> pipeline.Compiled:
    """The tests install it into fresh apps (`installed`), which write their own manifest."""
    return compiled_tiny()


def installed(compiled: pipeline.Compiled) -> WorkbenchApp:
    app = WorkbenchApp(None)
    app.session.spec, app.session.options = TINY, tui_options(TINY)
    app.session.install(compiled)
    return app


async def calibrate(pilot: Pilot[None], app: WorkbenchApp) -> CalibrateScreen:
    """Switch to the Calibrate screen (key 3) and return it."""
    await pilot.press("3")
    screen = app.screen
    assert isinstance(screen, CalibrateScreen)
    return screen


async def applied(
    pilot: Pilot[None], app: WorkbenchApp, screen: CalibrateScreen, label: str = ""
) -> tuple[tuning.Comparison, QuantRecord]:
    """Press `a` on the Calibrate screen, wait for `label`'s agreement line, and return the
    comparison it shows and the quant record the quantizer itself wrote into the new graph."""
    await pilot.press("a")
    line = f"{label}: top-1 agreement" if label else "top-1 agreement"
    await wait_for(pilot, lambda: line in text(app, "#result"))
    c = screen.comparison
    assert c is not None
    quant = c.new.compiled.qgraph.provenance.quant
    assert quant is not None
    return c, quant
