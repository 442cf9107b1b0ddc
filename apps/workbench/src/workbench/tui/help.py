"""`?`: every key of the app and of each screen, read from the bindings themselves (so the
list cannot drift from what the keys do)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


def class_bindings(cls: type[object]) -> list[tuple[str, Binding]]:
    """(keys, binding) for each action a class and its bases bind (a subclass's key wins),
    base first; the keys of one action are joined (`1, f1`)."""
    seen: dict[str, Binding] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith("textual."):
            continue  # Textual's own screen keys (copy, focus) are not the workbench's
        for binding in Binding.make_bindings(klass.__dict__.get("BINDINGS", [])):
            seen[binding.key] = binding
    actions: dict[tuple[str, str], list[Binding]] = {}
    for binding in seen.values():
        actions.setdefault((binding.action, binding.description), []).append(binding)
    return [(", ".join(b.key for b in group), group[0]) for group in actions.values()]


def key_label(app: App[object], keys: str) -> str:
    return ", ".join(app.get_key_display(Binding(k.strip(), "")) for k in keys.split(","))


def sections(app: App[object], screens: Iterable[tuple[str, type[Screen[None]]]]) -> Table:
    """One table: a heading row per section, then a row per key (key, what it does)."""
    table = Table(box=None, show_header=False, pad_edge=False, expand=True)
    table.add_column("key", no_wrap=True, style="bold", min_width=10)
    table.add_column("does", ratio=1)
    everywhere = class_bindings(type(app))
    table.add_row("[u]everywhere[/u]", "")
    for keys, b in everywhere:
        table.add_row(key_label(app, keys), b.description or b.action)
    palette = key_label(app, app.COMMAND_PALETTE_BINDING)
    table.add_row(palette, "Commands (open, compile, export, save, device, target)")
    for title, cls in screens:
        table.add_row("", "")
        table.add_row(f"[u]{title}[/u]", "")
        for keys, b in class_bindings(cls):
            table.add_row(key_label(app, keys), b.description or b.action)
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss_help", "Close help"),
    ]

    def __init__(self, screens: Iterable[tuple[str, type[Screen[None]]]]) -> None:
        super().__init__()
        self.screens = list(screens)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static("keys (escape or ? closes)", id="help-title")
            self.table = sections(self.app, self.screens)
            yield Static(self.table, id="help-keys")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
