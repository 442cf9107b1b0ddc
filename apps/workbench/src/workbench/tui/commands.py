"""The app's commands in Textual's command palette (ctrl+p): open, compile with options,
export, save, switch device or target. Each command is an app action, so the palette and the
keys run the same code."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

import mdla_legalize
from mdla_ir.devices import DEVICES

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp


class WorkbenchCommands(Provider):
    def commands(self) -> list[tuple[str, Callable[[], object], str]]:
        """(name, callback, help) for the current session: switching offers only the devices
        and targets not in use."""
        app = cast("WorkbenchApp", self.app)
        session = app.session
        found: list[tuple[str, Callable[[], object], str]] = [
            ("Open model", app.action_open, "a model spec or OUT.mdla (the Graph screen's o)"),
            (
                "Compile with options",
                app.action_compile_form,
                "target, device, skip rules, --cpu, method, percentile, calibration",
            ),
            ("Save .mdla", app.action_save, "write the open model's manifest"),
            ("Export .tflite", app.action_export, "write the open model's int8 graph"),
        ]
        found += [
            (f"Switch device: {d}", functools.partial(app.switch, device=d), "recompile for it")
            for d in DEVICES
            if d != session.device
        ]
        found += [
            (f"Switch target: {t}", functools.partial(app.switch, target=t), "recompile for it")
            for t in mdla_legalize.known_targets()
            if t != session.target_name
        ]
        found.append(
            (
                "Switch target: a .toml file",
                app.action_target_file,
                "a target description file (mdla3.5.toml's format)",
            )
        )
        found.append(("Keys (help)", app.action_help, "every key binding"))
        return found

    async def discover(self) -> Hits:
        for name, callback, help_text in self.commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self.commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, text=name, help=help_text)
