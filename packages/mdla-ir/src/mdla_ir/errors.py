"""The IR's errors: one base, subclasses that carry the op or tensor they are about."""

from __future__ import annotations

from typing import Any


class IRError(Exception):
    """Base error of mdla_ir."""


class VerifyError(IRError):
    """A graph breaks a structural invariant; `op` names the op (or None for graph-level)."""

    def __init__(self, message: str, op: str | None = None) -> None:
        super().__init__(message)
        self.op = op


class UnsupportedError(IRError):
    """The importer met constructs it cannot represent; `items` lists every one of them.
    `partial` is the graph of what did import (each refused construct's result a graph input),
    for the later stages to report on at once; None when there is none."""

    def __init__(self, message: str, items: list[str], partial: Any = None) -> None:
        super().__init__(message)
        self.items = items
        self.partial = partial

    @classmethod
    def of_model(cls, name: str, items: list[str], partial: Any = None) -> UnsupportedError:
        """The refusal of model `name`: every item on its own line (both importers say it so)."""
        head = f"cannot import `{name}`: {len(items)} unsupported construct(s):\n  "
        return cls(head + "\n  ".join(items), items, partial)
