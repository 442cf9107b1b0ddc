"""The workbench TUI: modes (one screen each), global keys, and the shared session.

Keys: 1-5 (or F1-F5) Graph, Bisect, Calibrate, Witness, Run; q quits (ctrl+q in a text field).
"""

from __future__ import annotations

import contextlib
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.widgets import Input

from workbench import witnessing
from workbench.tui.bisect import BisectScreen
from workbench.tui.calibrate import CalibrateScreen
from workbench.tui.graph import GraphScreen
from workbench.tui.run import RunScreen
from workbench.tui.state import Session
from workbench.tui.witness import WitnessScreen


class WorkbenchApp(App[None]):
    CSS_PATH = "workbench.tcss"
    TITLE = "mdla workbench"
    MODES: ClassVar = {
        "graph": GraphScreen,
        "bisect": BisectScreen,
        "calibrate": CalibrateScreen,
        "witness": WitnessScreen,
        "run": RunScreen,
    }
    DEFAULT_MODE = "graph"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_unless_typing", "Quit", priority=True),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("1,f1", "switch_mode('graph')", "Graph"),
        Binding("2,f2", "switch_mode('bisect')", "Bisect"),
        Binding("3,f3", "switch_mode('calibrate')", "Calibrate"),
        Binding("4,f4", "switch_mode('witness')", "Witness"),
        Binding("5,f5", "switch_mode('run')", "Run"),
    ]

    def __init__(self, spec: str | None = None, on: str = "emu") -> None:
        super().__init__()
        self.session = Session(target_spec=on, pending=spec)
        self._resources = contextlib.ExitStack()

    def on_mount(self) -> None:
        if self.session.target_spec == "emu":
            node = self._resources.enter_context(witnessing.emulator_counter())
            self.session.use_emulator_counter(node)

    def on_unmount(self) -> None:
        self._resources.close()

    def action_quit_unless_typing(self) -> None:
        """q quits, except in a text field, where it is typed (ctrl+q quits there)."""
        focused = self.focused
        if isinstance(focused, Input):
            focused.insert_text_at_cursor("q")
        else:
            self.exit()
