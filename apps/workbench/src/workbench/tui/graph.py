"""Graph: the op table (index, name, kind, shape, support, scale/zero point, SQNR), searchable,
with the selected op's details. `o` opens a model spec or .mdla, `c` (app-wide) the compile
form; either compiles in a worker while a progress bar shows the stage.

The cursor (as an op index) and the search text live in the session, so they survive screen
switches and re-renders. Columns are sized to the table's width: numbers (index, shape,
scale/zp, SQNR) always in full, names and kinds cut with an ellipsis to fit (a name loses its
start, `…block.2.conv`, a kind its end)."""

from __future__ import annotations

import math
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Input, ProgressBar, Static

from mdla_compile import CompileError, CompileOptions
from mdla_zoo import ZooError
from workbench.errors import one_line
from workbench.tui.base import WorkScreen
from workbench.tui.chart import cut_start
from workbench.tui.state import OpRow, describe, steps, support_text, tui_options

COLUMNS = ("#", "op", "kind", "shape", "mdla", "scale/zp", "SQNR")
PAD = 2  # a DataTable cell's padding, one each side
SCROLLBAR = 2
MIN_NAME = 6


def cells(r: OpRow) -> tuple[str, ...]:
    q = "" if r.scale is None else f"{r.scale:.3g}/{r.zero_point}"
    db = "" if r.sqnr_db is None else "inf" if math.isinf(r.sqnr_db) else f"{r.sqnr_db:.1f}"
    shape = "×".join(map(str, r.shape))
    return (str(r.index), r.name, r.kind, shape, support_text(r), q, db)


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def fit(rows: list[tuple[str, ...]], width: int) -> list[int]:
    """Column widths for `width` cells: every column but name (1) and kind (2) as wide as its
    longest cell; name and kind in full when they fit, else kind gets a third of the room
    left (at most its longest) and name the rest, each at least MIN_NAME."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(COLUMNS)]
    fixed = sum(w for i, w in enumerate(widths) if i not in (1, 2)) + PAD * len(COLUMNS)
    room = width - SCROLLBAR - fixed
    if widths[1] + widths[2] > room:
        widths[2] = min(widths[2], max(MIN_NAME, room // 3, room - widths[1]))
        widths[1] = max(MIN_NAME, room - widths[2])
    return widths


class GraphScreen(WorkScreen):
    AUTO_FOCUS = "#ops"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search"),
        Binding("o", "open", "Open"),
        Binding("escape", "table", "Table", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield self.bar()
        yield Static("no model open: press o and type a model spec or OUT.mdla", id="summary")
        with Horizontal(id="loading"):
            yield Static("", id="stage")
            yield ProgressBar(total=1, show_eta=False, id="compile-progress")
        yield Input(placeholder="model spec or OUT.mdla, then enter", id="open")
        yield Input(self.session.search, placeholder="search ops by name or kind", id="search")
        with Horizontal(id="body"):
            yield DataTable(id="ops", cursor_type="row", zebra_stripes=True)
            yield Static("", id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#loading").display = False
        self.query_one("#search", Input).display = bool(self.session.search)
        self.query_one("#ops", DataTable).focus()
        self.refresh_rows()
        if self.session.pending is not None:
            options, self.session.pending = self.session.pending, None
            self.start_compile(options)

    def on_screen_resume(self) -> None:
        self.refresh_rows()

    def on_resize(self) -> None:
        self.call_after_refresh(self.refresh_rows)

    def shown_rows(self) -> list[OpRow]:
        text = self.session.search.strip().lower()
        rows = self.session.rows
        return [r for r in rows if text in r.name.lower() or text in r.kind.lower()]

    def refresh_rows(self) -> None:
        table = self.query_one("#ops", DataTable)
        rows = self.shown_rows()
        texts = [cells(r) for r in rows]
        widths = fit(texts, table.size.width or self.size.width)
        keep = self.session.selected
        table.clear(columns=True)
        for name, w in zip(COLUMNS, widths, strict=True):
            table.add_column(name, width=w)
        for r, t in zip(rows, texts, strict=True):
            shown = [cut(c, w) for c, w in zip(t, widths, strict=True)]
            shown[1] = cut_start(t[1], widths[1])  # an op name's end tells siblings apart
            table.add_row(*shown, key=str(r.index))
        if not self.query_one("#loading").display:
            self.query_one("#summary", Static).update(self.session.note or "no model open: o")
        self.session.selected = keep
        if keep is not None:
            self.select(keep)
        self.show_detail()

    def select(self, index: int) -> None:
        table = self.query_one("#ops", DataTable)
        keys = [r.index for r in self.shown_rows()]
        if index in keys:
            table.move_cursor(row=keys.index(index))

    def show_detail(self) -> None:
        table = self.query_one("#ops", DataTable)
        rows = self.shown_rows()
        detail = self.query_one("#detail", Static)
        if rows and 0 <= table.cursor_row < len(rows):
            detail.update(describe(rows[table.cursor_row]))
        else:
            detail.update("")

    @on(DataTable.RowHighlighted, "#ops")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.session.selected = int(event.row_key.value)
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
    def _filter(self, event: Input.Changed) -> None:
        if event.value != self.session.search:
            self.session.search = event.value
            self.refresh_rows()

    @on(Input.Submitted, "#search")
    def _search_done(self) -> None:
        self.query_one("#ops", DataTable).focus()

    @on(Input.Submitted, "#open")
    def _open(self, event: Input.Submitted) -> None:
        spec = event.value.strip()
        if spec:
            event.input.display = False
            self.query_one("#ops", DataTable).focus()
            options = self.session.options  # another model: only the target carries over
            try:  # a zoo name's typo is refused here, at once, with the names it may mean
                chosen = tui_options(spec, target=options.target, device=options.device)
            except (CompileError, ZooError) as exc:
                self.notify(one_line(exc), title="error", severity="error", timeout=8)
                return
            self.start_compile(chosen)

    def start_compile(self, options: CompileOptions) -> None:
        """Show the loading row (stage and bar) and compile `options` in a worker."""
        self.query_one("#loading").display = True
        self.query_one("#compile-progress", ProgressBar).update(total=steps(options), progress=0)
        self.progress("opening", 0, steps(options))
        self.query_one("#summary", Static).update(f"opening {options.spec} ...")
        self.compile_model(options)

    def progress(self, stage: str, done: int, total: int) -> None:
        self.query_one("#stage", Static).update(f"{stage} ({done}/{total})")
        self.query_one("#compile-progress", ProgressBar).update(total=total, progress=done)
        self.app_busy(f"compiling: {stage}")

    def app_busy(self, text: str) -> None:
        from workbench.tui.app import WorkbenchApp  # the app imports this module

        app = self.app
        if isinstance(app, WorkbenchApp):
            app.busy = text
            app.refresh_bar()

    def finished(self) -> None:
        for warning in self.session.warnings:
            self.notify(warning, title="compile", severity="warning", timeout=8)
        self.session.warnings = ()
        self.query_one("#loading").display = False
        self.app_busy("")
        self.refresh_rows()

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def compile_model(self, options: CompileOptions) -> None:
        try:
            self.session.compile(options, lambda *a: self.ui(self.progress, *a))
        finally:
            self.ui(self.finished)
