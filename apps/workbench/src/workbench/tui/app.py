"""The workbench TUI: modes (one screen each), global keys and commands, the shared session.

Keys: 1-5 (or F1-F5) Graph, Bisect, Calibrate, Witness, Run; ? help; c compile form; ctrl+p
commands; q quits (ctrl+q in a text field); ctrl+c quits too. Quitting, however it happens,
removes the session's temp dir and closes its target (`Session.close`).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input

from mdla_compile import CompileOptions
from workbench import witnessing
from workbench.errors import INTERRUPTED, one_line
from workbench.tui import restore
from workbench.tui.bisect import BisectScreen
from workbench.tui.calibrate import CalibrateScreen
from workbench.tui.chrome import SCREENS, ScreenBar
from workbench.tui.commands import WorkbenchCommands
from workbench.tui.forms import CompileForm, PathPrompt
from workbench.tui.graph import GraphScreen
from workbench.tui.help import HelpScreen
from workbench.tui.run import RunScreen
from workbench.tui.state import Session, tui_options
from workbench.tui.witness import WitnessScreen

# in the order of SCREENS (chrome.py): the number keys and the bar's screen list
SCREEN_CLASSES: tuple[type[Screen[None]], ...] = (
    GraphScreen,
    BisectScreen,
    CalibrateScreen,
    WitnessScreen,
    RunScreen,
)


class WorkbenchApp(App[None]):
    CSS_PATH = "workbench.tcss"
    TITLE = "mdla workbench"
    MODES: ClassVar = dict(zip((m for m, _ in SCREENS), SCREEN_CLASSES, strict=True))
    DEFAULT_MODE = "graph"
    COMMANDS: ClassVar = {*App.COMMANDS, WorkbenchCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # noqa: RUF012 (Textual's)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_unless_typing", "Quit", priority=True),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help"),
        Binding("c", "compile_form", "Compile…"),
        Binding("1,f1", "switch_mode('graph')", "Graph", show=False),
        Binding("2,f2", "switch_mode('bisect')", "Bisect", show=False),
        Binding("3,f3", "switch_mode('calibrate')", "Calibrate", show=False),
        Binding("4,f4", "switch_mode('witness')", "Witness", show=False),
        Binding("5,f5", "switch_mode('run')", "Run", show=False),
    ]

    def __init__(
        self, spec: str | None = None, on: str = "emu", options: CompileOptions | None = None
    ) -> None:
        """Open `spec` (a model spec or OUT.mdla) with `options`, the record `workbench tui`
        builds from the same options `workbench compile` takes (default: `tui_options`)."""
        super().__init__()
        chosen = options or tui_options()
        pending = replace(chosen, model=spec) if spec else None
        self.session = Session(target_spec=on, pending=pending, options=chosen)
        self._resources = contextlib.ExitStack()
        self.busy = ""  # what the compile worker is doing, shown in every screen's bar
        self.interrupted = False  # a SIGHUP or SIGTERM asked it to stop (`interrupt`)
        self.loop: asyncio.AbstractEventLoop | None = None  # set once the first frame is up

    def on_ready(self) -> None:
        """The first frame is up: from here a signal's exit goes through the loop (`interrupt`);
        one that came while Textual was starting exits now (an exit during the screens' mount
        left them half-made, with a traceback)."""
        self.loop = asyncio.get_running_loop()
        if self.interrupted:
            self.exit(return_code=INTERRUPTED)

    def interrupt(self) -> None:
        """Stop as `q` does, from a signal handler (`commands.tui.hangup_is_interrupt`): the
        exit is handed to the event loop once it is ready (`on_ready`), or gone. (Raising
        KeyboardInterrupt there, between any two bytecodes of the loop's own code, left
        asyncio's tasks half-made and printed their warnings.) A second signal stops at once."""
        if self.interrupted:
            raise KeyboardInterrupt
        self.interrupted = True
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.exit, None, INTERRUPTED)

    def on_mount(self) -> None:
        if self.session.target_spec == "emu":
            node = self._resources.enter_context(witnessing.emulator_counter())
            self.session.use_emulator_counter(node)

    def on_unmount(self) -> None:
        self.cleanup()

    def cleanup(self) -> None:
        """Remove the temp dirs and close the target; safe to call again (after Ctrl-C)."""
        self._resources.close()
        self.session.close()

    def refresh_bar(self) -> None:
        for bar in self.screen.query(ScreenBar):
            bar.show(self.session, self.current_mode, self.busy)

    def action_quit_unless_typing(self) -> None:
        """q quits, except in a text field, where it is typed (ctrl+q quits there)."""
        focused = self.focused
        if isinstance(focused, Input):
            focused.insert_text_at_cursor("q")
        else:
            self.exit()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            titles = (title for _, title in SCREENS)
            self.push_screen(HelpScreen(zip(titles, SCREEN_CLASSES, strict=True)))

    def action_open(self) -> None:
        """The Graph screen's open field (what `o` there does)."""
        self.with_graph(lambda graph: graph.action_open())

    def action_compile_form(self) -> None:
        options = self.session.options
        if self.session.recorded is not None:  # an open .mdla: how it was compiled
            options = self.session.recorded
        elif not options.spec and self.session.spec:
            options = replace(options, model=self.session.spec)

        def done(chosen: CompileOptions | None) -> None:
            if chosen is not None:
                self.compile(chosen)

        hint = restore.weights_hint(self.session.manifest) if self.session.recorded else None
        self.push_screen(CompileForm(options, hint), done)

    def switch(self, **changes: Any) -> None:
        """Another device or target: recompile the open model for it (or just remember it)."""
        options = replace(self.session.options, **changes)
        if self.session.spec:
            self.compile(replace(options, model=self.session.spec))
        else:
            self.session.options = options
            self.refresh_bar()
            self.notify(f"{', '.join(f'{k} {v}' for k, v in changes.items())}: open a model")

    def compile(self, options: CompileOptions) -> None:
        """Open or compile on the Graph screen, which shows the progress."""
        self.with_graph(lambda graph: graph.start_compile(options))

    def with_graph(self, call: Any) -> None:
        if self.current_mode == "graph" and isinstance(self.screen, GraphScreen):
            call(self.screen)
            return
        self.switch_mode("graph")
        self.call_after_refresh(lambda: call(self.screen))

    def action_target_file(self) -> None:
        def done(path: str | None) -> None:
            if path:
                self.switch(target=path)

        self.push_screen(PathPrompt("target description (.toml)", "path/target.toml"), done)

    def action_save(self) -> None:
        self.prompt_path("save the open model as (.mdla)", "path/model.mdla", self.save_to)

    def action_export(self) -> None:
        self.prompt_path("export the int8 graph as (.tflite)", "path/model.tflite", self.export_to)

    def prompt_path(self, title: str, placeholder: str, then: Any) -> None:
        if self.session.compiled is None:
            self.notify("compile a model spec first (c, or o on Graph)", severity="warning")
            return
        self.push_screen(PathPrompt(title, placeholder), lambda p: p and then(p))

    @work(thread=True, exclusive=True, group="write", exit_on_error=False)
    def save_to(self, path: str) -> None:
        compiled = self.session.compiled
        assert compiled is not None  # checked by prompt_path
        compiled.save(path)
        self.call_from_thread(self.notify, f"saved {path}", title="save")

    @work(thread=True, exclusive=True, group="write", exit_on_error=False)
    def export_to(self, path: str) -> None:
        compiled = self.session.compiled
        assert compiled is not None  # checked by prompt_path
        compiled.export_tflite(path)
        self.call_from_thread(self.notify, f"exported {path}", title="export")

    def on_worker_state_changed(self, event: Any) -> None:
        """The app's own workers (save, export): an error is a toast, never a crash."""
        error = getattr(event.worker, "error", None)
        if event.worker.group == "write" and error is not None:
            self.notify(one_line(error), title="error", severity="error", timeout=8)
