"""The legalizer's errors: one base, carrying every item it is about (not only the first)."""

from __future__ import annotations


class LegalizeError(Exception):
    """Base error of mdla_legalize; `items` lists each offending op or name, one line each."""

    def __init__(self, message: str, items: list[str] | None = None) -> None:
        super().__init__(message)
        self.items = list(items or [])
