"""The command palette's other commands (issue 21; export, save and device switching are in
test_tui.py): it lists open, compile with options, save, export, each other device, a target
file and the keys; `Open model` and `Compile with options` open their forms; a target file
chosen there recompiles the open model against it and the header names it."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

import mdla_target
from tests.workbench.snapshots import screen_text
from tests.workbench.tui_pilot import installed, sync, tiny, wait_for
from workbench import pipeline
from workbench.tui.commands import WorkbenchCommands
from workbench.tui.forms import CompileForm, PathPrompt

__all__ = ["tiny"]  # the module-scoped fixture

SHIPPED = Path(mdla_target.__file__).with_name("targets") / "mdla3.5.toml"


async def palette(pilot: Pilot[None], query: str) -> None:
    """Run the palette's best match for `query`."""
    await pilot.press("ctrl+p", *query)
    await pilot.pause(0.5)
    await pilot.press("enter")


@sync
async def test_the_palette_lists_every_app_command(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        provider = WorkbenchCommands(app.screen)
        names = [name for name, _, _ in provider.commands()]
        assert names == [
            "Open model",
            "Compile with options",
            "Save .mdla",
            "Export .tflite",
            "Switch device: mtk-gpu",  # not mtk-mdla: the one in use
            "Switch device: mtk-dsp",
            "Switch target: a .toml file",  # mdla3.5, the only shipped one, is in use
            "Keys (help)",
        ]
        await palette(pilot, "compile with")
        await wait_for(pilot, lambda: isinstance(app.screen, CompileForm), 5)
        await pilot.press("escape")
        await palette(pilot, "open model")
        await wait_for(pilot, lambda: bool(app.screen.query("#open")), 5)
        assert isinstance(app.screen.query_one("#open"), Input)


@sync
async def test_a_target_file_from_the_palette_recompiles_for_it(
    tiny: pipeline.Compiled, tmp_path: Path
) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text(SHIPPED.read_text().replace('name = "mdla3.5"', 'name = "mine"', 1))
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        await palette(pilot, "toml")
        await wait_for(pilot, lambda: isinstance(app.screen, PathPrompt), 5)
        await pilot.press(*str(mine), "enter")
        await wait_for(pilot, lambda: app.session.target_name == str(mine), 10)
        await wait_for(pilot, lambda: app.session.compiled is not tiny, 120)
        compiled = app.session.compiled
        assert compiled is not None
        assert compiled.config.target == str(mine)
        await pilot.pause(0.2)
        assert f"target {mine}" in screen_text(app).splitlines()[0]
