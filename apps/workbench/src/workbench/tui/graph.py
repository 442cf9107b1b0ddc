"""Graph: the op table (index, kind, shape, support and reason, scale/zero point, SQNR),
searchable, with the selected op's details. `o` opens a model spec or .mdla in a worker."""

from __future__ import annotations

import math
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Input, Static

from workbench.tui.base import WorkScreen
from workbench.tui.state import OpRow, describe

COLUMNS = ("#", "op", "kind", "shape", "mdla", "scale/zp", "SQNR")


class GraphScreen(WorkScreen):
    AUTO_FOCUS = "#ops"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search"),
        Binding("o", "open", "Open"),
        Binding("escape", "table", "Table", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Static("no model open: press o and type a model spec or OUT.mdla", id="summary")
        yield Input(placeholder="model spec or OUT.mdla, then enter", id="open")
        yield Input(placeholder="search ops by name or kind", id="search")
        with Horizontal(id="body"):
            yield DataTable(id="ops", cursor_type="row", zebra_stripes=True)
            yield Static("", id="detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#ops", DataTable)
        table.add_columns(*COLUMNS)
        table.focus()
        self.refresh_rows()
        if self.session.pending is not None:
            spec, self.session.pending = self.session.pending, None
            self.query_one("#summary", Static).update(f"opening {spec} ...")
            self.open_model(spec)

    def on_screen_resume(self) -> None:
        self.refresh_rows()

    def shown_rows(self) -> list[OpRow]:
        text = self.query_one("#search", Input).value.strip().lower()
        rows = self.session.rows
        return [r for r in rows if text in r.name.lower() or text in r.kind.lower()]

    def refresh_rows(self) -> None:
        table = self.query_one("#ops", DataTable)
        table.clear()
        for r in self.shown_rows():
            ok = "?" if r.supported is None else "yes" if r.supported else "NO"
            q = "" if r.scale is None else f"{r.scale:.3g}/{r.zero_point}"
            db = "" if r.sqnr_db is None else "inf" if math.isinf(r.sqnr_db) else f"{r.sqnr_db:.1f}"
            table.add_row(
                str(r.index),
                r.name,
                r.kind,
                "×".join(map(str, r.shape)),
                ok,
                q,
                db,
                key=str(r.index),
            )
        self.query_one("#summary", Static).update(self.session.note or "no model open: press o")
        if self.session.selected is not None:
            self.select(self.session.selected)
        self.show_detail()

    def select(self, index: int) -> None:
        table = self.query_one("#ops", DataTable)
        keys = [r.index for r in self.shown_rows()]
        if index in keys:
            table.move_cursor(row=keys.index(index))
            table.focus()

    def show_detail(self) -> None:
        table = self.query_one("#ops", DataTable)
        rows = self.shown_rows()
        detail = self.query_one("#detail", Static)
        if rows and 0 <= table.cursor_row < len(rows):
            detail.update(describe(rows[table.cursor_row]))
        else:
            detail.update("")

    @on(DataTable.RowHighlighted, "#ops")
    def _highlighted(self) -> None:
        self.show_detail()

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.focus()

    def action_open(self) -> None:
        box = self.query_one("#open", Input)
        box.display = True
        box.focus()

    def action_table(self) -> None:
        for box in self.query(Input):
            box.display = bool(box.id == "search" and box.value)
        self.query_one("#ops", DataTable).focus()

    @on(Input.Changed, "#search")
    def _filter(self) -> None:
        self.refresh_rows()

    @on(Input.Submitted, "#search")
    def _search_done(self) -> None:
        self.query_one("#ops", DataTable).focus()

    @on(Input.Submitted, "#open")
    def _open(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.query_one("#summary", Static).update(f"opening {event.value.strip()} ...")
            event.input.display = False
            self.open_model(event.value.strip())

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def open_model(self, spec: str) -> None:
        try:
            self.session.open(spec)
        finally:
            self.ui(self.refresh_rows)
