"""A sparkline that draws only what was measured: nothing but its caption until the first
value, one column per value (the newest on the right), heights from zero to the largest value
shown, so a zero is no bar at all and a small value is never drawn as a tall one. (Textual's
Sparkline draws a baseline with no data, solid rows for one value, and scales from the
smallest value, so an idle counter and a steady latency both looked like activity.)"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widget import Widget

EIGHTHS = " ▁▂▃▄▅▆▇█"


def columns(data: Sequence[float], width: int, height: int) -> list[str]:
    """The rows, top first, of the last `width` values' bars in `height` rows; a value above
    zero is at least one eighth of a row high, zero (or below) is blank."""
    shown = list(data)[-width:] if width > 0 else []
    top = max(shown, default=0.0)
    levels = []
    for v in shown:
        n = 0 if v <= 0 or top <= 0 else max(1, round(v / top * height * 8))
        levels.append(n)
    return [
        "".join(EIGHTHS[min(8, max(0, n - r * 8))] for n in levels) for r in reversed(range(height))
    ]


class Spark(Widget):
    """The bars of `data` (set it; the widget redraws), or `empty` until there is any."""

    def __init__(self, empty: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.empty = empty
        self._data: list[float] = []

    @property
    def data(self) -> list[float]:
        return self._data

    @data.setter
    def data(self, values: Sequence[float]) -> None:
        self._data = list(values)
        self.refresh()

    def render(self) -> Text:
        if not self._data:
            return Text(self.empty, style="dim")
        rows = columns(self._data, self.size.width, self.size.height)
        return Text("\n".join(rows), style="green")
