"""Calibrate's per-layer chart, laid out for the width it is drawn at: rows named by op (as the
Graph screen names them; the tensor is a secondary column shown when there is room), every
number in full (its column as wide as its longest cell), and columns dropped by priority when
the terminal is too narrow for all of them. A long name keeps its end (`…block.3.conv`): the
end is what tells sibling layers apart."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rich.console import Console, ConsoleOptions
from rich.table import Table
from rich.text import Text

from workbench import tuning

BAR_DB = 60.0  # a full bar
MIN_NAME = 10  # below this an op name says nothing: a column is dropped instead
MAX_NAME = 28
MIN_BAR, MAX_BAR = 4, 20  # 4: the header `prev`
# the columns after the name, most important first: what is dropped when it does not fit
PRIORITY = ("SQNR", "cos", "max|e|", "Δ dB", "new", "Δcos", "Δmax", "prev", "tensor")
ORDER = ("cos", "Δcos", "SQNR", "Δ dB", "max|e|", "Δmax", "new", "prev", "tensor")
BARS = ("new", "prev")


def db(value: float) -> str:
    return ("inf" if value > 0 else "-inf") if math.isinf(value) else f"{value:.1f}"


def signed(value: float | None, fmt: str) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return fmt.format(value)


def cut_start(text: str, width: int) -> str:
    """`text` in `width` cells, its start replaced by an ellipsis when it is longer."""
    return text if len(text) <= width else "…" + text[len(text) - width + 1 :]


def bar(db_value: float | None, width: int, style: str) -> Text:
    if db_value is None:
        return Text("-".ljust(width))
    full = math.isinf(db_value) and db_value > 0
    n = width if full else round(max(0.0, min(db_value, BAR_DB)) / BAR_DB * width)
    return Text("█" * n + " " * (width - n), style=style)


def names(rows: list[dict[str, Any]]) -> list[str]:
    """Each row's op name; an op with several tensors in the chart numbers them (`op[1]`)."""
    ops = [str(r["op"]) for r in rows]
    seen: dict[str, int] = {}
    out = []
    for op in ops:
        k = seen.get(op, 0)
        seen[op] = k + 1
        out.append(op if ops.count(op) == 1 else f"{op}[{k}]")
    return out


def number_cells(row: dict[str, Any]) -> dict[str, str]:
    return {
        "cos": f"{row['cosine']:.4f}",
        "Δcos": signed(row["delta_cosine"], "{:+.1e}"),
        "SQNR": db(float(row["sqnr_db"])),
        "Δ dB": signed(row["delta_sqnr_db"], "{:+.1f}"),
        "max|e|": f"{row['max_abs_error']:.3g}",
        "Δmax": signed(row["delta_max_abs_error"], "{:+.1e}"),
    }


@dataclass
class Layout:
    """Which columns are shown and how wide each is (the name's included)."""

    widths: dict[str, int]

    @property
    def shown(self) -> list[str]:
        return ["layer", *(c for c in ORDER if c in self.widths)]


def layout(
    cells: list[dict[str, str]], labels: list[str], tensors: list[str], width: int
) -> Layout:
    """Columns for `width` cells, one space between columns: each number at its longest cell,
    the name at least MIN_NAME and each bar at least MIN_BAR; what does not fit is dropped
    from the end of PRIORITY. What is left widens the name (to MAX_NAME), then the bars (to
    MAX_BAR), then shows the tensors."""
    need = {c: max([len(c), *(len(r[c]) for r in cells)]) for c in ORDER[:6]}
    need |= dict.fromkeys(BARS, MIN_BAR)
    longest = max([len("layer"), *map(len, labels)])
    widths = {"layer": min(longest, MIN_NAME)}
    kept = [c for c in PRIORITY if c != "tensor"]
    while kept and widths["layer"] + sum(need[c] + 1 for c in kept) > width:
        kept.pop()
    widths |= {c: need[c] for c in kept}

    def spare() -> int:
        return width - sum(widths.values()) - (len(widths) - 1)

    widths["layer"] += max(0, min(spare(), min(longest, MAX_NAME) - widths["layer"]))
    bars = [b for b in BARS if b in widths]
    each = max(0, min(MAX_BAR - MIN_BAR, spare() // max(1, len(bars))))
    for b in bars:
        widths[b] += each
    room = spare() - 1
    if len(kept) == len(PRIORITY) - 1 and room >= MIN_NAME:
        widths["tensor"] = min(room, max(len("tensor"), *map(len, tensors)))
    return Layout(widths)


def chart(c: tuning.Comparison, width: int = 78) -> Table:
    """Per layer in op order: the new cosine, SQNR and max |error|, each with its delta
    against the previous setting, and both settings' SQNR as bars (new, then previous), in
    `width` columns (`layout`)."""
    rows = c.deltas()
    old = {t.tensor: t.sqnr_db for t in c.previous.layers} if c.previous else {}
    cells = [number_cells(r) for r in rows]
    labels, tensors = names(rows), [str(r["tensor"]) for r in rows]
    lay = layout(cells, labels, tensors, width)
    table = Table(box=None, show_header=True, pad_edge=False, collapse_padding=True)
    for col in lay.shown:
        right = col in ORDER[:6]
        table.add_column(
            col, justify="right" if right else "left", no_wrap=True, width=lay.widths[col]
        )
    for row, cell, label, tensor in zip(rows, cells, labels, tensors, strict=True):
        db_value = float(row["sqnr_db"])
        style = "red" if db_value < 20 else "yellow" if db_value < 30 else "green"
        shown: dict[str, str | Text] = {"layer": cut_start(label, lay.widths["layer"]), **cell}
        if "new" in lay.widths:
            shown["new"] = bar(db_value, lay.widths["new"], style)
        if "prev" in lay.widths:
            shown["prev"] = bar(old.get(tensor), lay.widths["prev"], "dark_orange")
        if "tensor" in lay.widths:
            shown["tensor"] = Text(cut_start(tensor, lay.widths["tensor"]), style="dim")
        table.add_row(*(shown[col] for col in lay.shown))
    return table


class Chart:
    """`chart` drawn at whatever width the widget holding it has (a resize redraws it)."""

    def __init__(self, comparison: tuning.Comparison) -> None:
        self.comparison = comparison

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Table]:
        yield chart(self.comparison, options.max_width)
