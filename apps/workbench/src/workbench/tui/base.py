"""What every screen shares: the session, and failing workers shown as notifications."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from workbench.errors import one_line
from workbench.tui.chrome import ScreenBar
from workbench.tui.state import Session

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp


class WorkScreen(Screen[None]):
    """A screen whose slow work runs in thread workers; a worker's error becomes a toast.

    Text fields are never focused on arrival (tab reaches them, escape leaves them), so the
    global keys (1-5, q) work as soon as a screen shows. Every screen starts with the
    ScreenBar (compose yields `self.bar()` first), refreshed whenever the screen shows."""

    AUTO_FOCUS = ""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave_field", "Leave field", show=False)
    ]

    def action_leave_field(self) -> None:
        self.set_focus(None)

    @property
    def session(self) -> Session:
        return cast("WorkbenchApp", self.app).session

    def bar(self) -> ScreenBar:
        return ScreenBar(id="bar")

    def on_screen_resume(self) -> None:
        cast("WorkbenchApp", self.app).refresh_bar()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(one_line(event.worker.error), title="error", severity="error", timeout=8)
            self.worker_failed(event.worker.error)

    def worker_failed(self, error: BaseException) -> None:
        """Hook: tidy up the screen after a worker failed (the toast is already shown)."""

    def ui(self, fn: Any, *args: Any) -> None:
        """Call `fn(*args)` on the UI thread (from a worker thread)."""
        self.app.call_from_thread(fn, *args)
