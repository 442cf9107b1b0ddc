"""The bar at the top of every screen: what is open (model, target, device, where it runs)
and the screen list with the current one marked, so nothing depends on remembering keys."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from workbench.tui.state import Session

# (mode, title): the order of the number keys 1-5 and of the list in the bar
SCREENS = (
    ("graph", "Graph"),
    ("bisect", "Bisect"),
    ("calibrate", "Calibrate"),
    ("witness", "Witness"),
    ("run", "Run"),
)


def model_label(session: Session) -> str:
    if session.manifest is not None:
        return session.manifest.name
    if session.compiled is not None:
        return session.compiled.device_graph.name
    return "(none: o opens)"


def status_line(session: Session, busy: str = "") -> Text:
    """`model NAME  target mdla3.5  device mtk-mdla  on emu`; the model name is what gives
    when the line is too long (it is cut with an ellipsis by the widget, the rest stay)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(" target ", "dim")
    text.append(session.target_name, "bold")
    text.append("  device ", "dim")
    text.append(session.device, "bold")
    text.append("  on ", "dim")
    text.append(session.target_spec, "bold")
    if busy:
        text.append(f"  {busy}", "italic")
    text.append("  model ", "dim")
    text.append(model_label(session), "bold")
    return text


def tabs_line(mode: str) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for key, (name, title) in enumerate(SCREENS, 1):
        style = "reverse bold" if name == mode else ""
        text.append(f" {key} {title} ", style)
        text.append(" ")
    text.append(" ? help  ^p commands", "dim")
    return text


class ScreenBar(Static):
    """Two lines: the session's model/target/device, then the screens (the current one
    reversed). Screens call `show` when they resume and the app when the session changes."""

    shown = Text()

    def show(self, session: Session, mode: str, busy: str = "") -> None:
        lines = [status_line(session, busy), tabs_line(mode)]
        self.shown = Text("\n").join(lines)  # cut, not wrapped: #bar in workbench.tcss
        self.update(self.shown)
