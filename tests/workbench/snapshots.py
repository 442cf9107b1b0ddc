"""SVG snapshots of TUI screens, compared with the files committed under `snapshots/`.

`WORKBENCH_UPDATE_SNAPSHOTS=1 pytest tests/workbench` rewrites them. Temporary paths (the
emulator's counter directory), the checkout's path (a model spec in the compile form) and the
SVG id rich derives from the unmasked text are masked, so the files do not depend on the run.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App

DIR = Path(__file__).with_name("snapshots")
MASKS = [
    (re.compile(r"/tmp/[\w.-]+/"), "/tmp/X/"),
    (re.compile(str(Path(__file__).resolve().parents[2]) + "/"), "REPO/"),  # the checkout
    (re.compile(r"terminal-\d+"), "terminal-0"),  # rich's id: a hash of the unmasked text
]


def normalize(svg: str) -> str:
    for pattern, repl in MASKS:
        svg = pattern.sub(repl, svg)
    return svg


def assert_snapshot(app: App[None], name: str) -> None:
    svg = normalize(app.export_screenshot(title=name))
    path = DIR / f"{name}.svg"
    if os.environ.get("WORKBENCH_UPDATE_SNAPSHOTS") == "1":
        DIR.mkdir(exist_ok=True)
        path.write_text(svg)
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path}: run with WORKBENCH_UPDATE_SNAPSHOTS=1 and review it")
    if path.read_text() != svg:
        (DIR / f"{name}.actual.svg").write_text(svg)
        pytest.fail(f"screen {name} differs from {path} (see {name}.actual.svg)")


def screen_text(app: App[None]) -> str:
    """The screen as plain text, one line per terminal row (what export_screenshot draws,
    without the SVG): for asserting what is visible, cell for cell."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text()
