"""Text captures of the workbench TUI (issue 21's closing note): every screen at 80x24 and
120x40, and a calibration comparison of two settings scored on held-out inputs.

    .venv/bin/python scripts/tui_captures.py > captures.md

Driven by Textual's Pilot (`app.run_test(size=...)`) with the tiny model of the tests
(tests/workbench/tiny_model.py) on the host emulator; each screen is rendered as text, row for
row, the way `tests/workbench/snapshots.py:screen_text` draws it (the SVG snapshots' text), with
temporary paths and the checkout's path masked as there. Markdown goes to stdout.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' helpers: the tiny model, the Pilot waits

from textual.pilot import Pilot  # noqa: E402
from textual.widgets import Input, Select  # noqa: E402

from mdla_compile import pipeline as compile_pipeline  # noqa: E402
from tests.workbench.conftest import TINY  # noqa: E402
from tests.workbench.snapshots import normalize, screen_text  # noqa: E402
from tests.workbench.tui_pilot import compiled_tiny, installed, settle, text, wait_for  # noqa: E402
from workbench.tui.app import WorkbenchApp  # noqa: E402
from workbench.tui.state import CompileOptions  # noqa: E402

SIZES = ((80, 24), (120, 40))
SPEC = str(Path(TINY).relative_to(ROOT))  # as the snapshots spell it: no checkout path
Shot = Callable[[str], Awaitable[None]]
Drive = Callable[[WorkbenchApp, Pilot[None], Shot], Awaitable[None]]


def emit(markdown: str) -> None:
    sys.stdout.write(markdown + "\n")


def capture(app: WorkbenchApp) -> str:
    lines = normalize(screen_text(app)).rstrip("\n").splitlines()
    return "\n".join(line.rstrip() for line in lines)


async def still(app: WorkbenchApp, pilot: Pilot[None]) -> None:
    for box in app.screen.query(Input):
        box.cursor_blink = False  # a blinking cursor would make two captures differ
    await settle(pilot, app)


async def screens(app: WorkbenchApp, pilot: Pilot[None], shot: Shot) -> None:
    """The five screens, help and the compile form, with the tiny model open."""
    await shot("Graph, tiny model open")
    await pilot.press("2", "s")
    await wait_for(pilot, lambda: "all 8 ops map" in text(app, "#status"))
    await shot("Bisect after `s`")
    await pilot.press("3", "a")
    await wait_for(pilot, lambda: "held-out" in text(app, "#result"))
    await shot("Calibrate after `a` (percentile 99.99, the default)")
    await pilot.press("1")
    await shot("Graph again: the SQNR column filled by Calibrate")
    await pilot.press("4")
    await wait_for(pilot, lambda: "runtime_status" in text(app, "#counter"), 5)
    await shot("Witness (idle)")
    app.screen.query_one("#idle", Input).value = "0.5"
    app.screen.query_one("#runs", Input).value = "200"
    await pilot.press("s")
    await wait_for(pilot, lambda: "verdict:" in text(app, "#verdict"), 60)
    await shot("Witness after `s` (idle 0.5 s, 200 runs)")
    await pilot.press("5")
    app.screen.query_one("#runs", Input).value = "3"
    await pilot.press("s")
    await wait_for(pilot, lambda: "3 run(s) on mtk-mdla" in text(app, "#latency"))
    await shot("Run after `s` (3 runs)")
    await pilot.press("question_mark")
    await shot("Help (`?`)")
    await pilot.press("escape", "c")
    await shot("Compile form (`c`)")
    await pilot.press("escape", "ctrl+p")
    await pilot.pause(0.5)
    await shot("Command palette (ctrl+p)")


async def compiling(app: WorkbenchApp, pilot: Pilot[None], shot: Shot) -> None:
    """The compile form filled in, the loading row while calibration is held, the result."""
    gate = threading.Event()
    real = compile_pipeline.calibration_inputs

    def held(*args: Any, **kwargs: Any) -> Any:
        gate.wait(60)
        return real(*args, **kwargs)

    compile_pipeline.calibration_inputs = held
    try:
        await pilot.press("c")
        form = app.screen
        form.query_one("#f-spec", Input).value = SPEC
        form.query_one("#f-method", Select).value = "minmax"
        form.query_one("#f-cpu", Input).value = "LOGISTIC"
        form.query_one("#f-count", Input).value = "3"
        await shot("Compile form filled in (minmax, LOGISTIC on the CPU, 3 inputs)")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "legalizing" in text(app, "#stage"), 30)
        await shot("Compiling: the loading row while calibration is held")
        gate.set()
        await wait_for(pilot, lambda: not app.screen.query_one("#loading").display, 60)
        await shot("The result: LOGISTIC placed on the CPU")
    finally:
        compile_pipeline.calibration_inputs = real
        gate.set()


async def two_settings(app: WorkbenchApp, pilot: Pilot[None], shot: Shot) -> None:
    """Calibrate: percentile 99.99, then mse, both scored on the same held-out inputs."""
    await pilot.press("3", "a")
    await wait_for(pilot, lambda: "held-out" in text(app, "#result"))
    app.screen.query_one("#method", Select).value = "mse"
    await pilot.press("a")
    await wait_for(pilot, lambda: "vs percentile" in text(app, "#result"))
    await shot("Calibrate after two settings (percentile 99.99, then mse): held-out scoring")


async def session(drive: Drive, size: tuple[int, int], fresh: bool = False) -> list[str]:
    app = WorkbenchApp(None) if fresh else installed(compiled_tiny())
    app.session.spec = SPEC
    app.session.options = CompileOptions(SPEC)
    out: list[str] = []
    async with app.run_test(size=size) as pilot:

        async def shot(title: str) -> None:
            await still(app, pilot)
            out.append(f"### {title} ({size[0]}×{size[1]})\n\n```text\n{capture(app)}\n```\n")

        await drive(app, pilot, shot)
    return out


async def main() -> None:
    emit("# mdla workbench TUI: text captures (issue 21)\n")
    emit(
        "Made by `scripts/tui_captures.py`: Textual's Pilot (`app.run_test(size=...)`), each "
        "screen rendered as text row for row; model tests/workbench/tiny_model.py:tiny on the "
        "host emulator. Temporary paths are masked as /tmp/X/.\n"
    )
    for size in SIZES:
        emit(f"## {size[0]}×{size[1]}\n")
        for part in (
            *await session(screens, size),
            *await session(compiling, size, fresh=True),
        ):
            emit(part)
    emit("## Calibration compared on held-out inputs (two settings)\n")
    for size in SIZES:
        for part in await session(two_settings, size):
            emit(part)


if __name__ == "__main__":
    asyncio.run(main())
