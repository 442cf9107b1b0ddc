"""The IR's errors: one base, subclasses that carry the op or tensor they are about."""

from __future__ import annotations


class IRError(Exception):
    """Base error of mdla_ir."""


class VerifyError(IRError):
    """A graph breaks a structural invariant; `op` names the op (or None for graph-level)."""

    def __init__(self, message: str, op: str | None = None) -> None:
        super().__init__(message)
        self.op = op


class UnsupportedError(IRError):
    """The importer met constructs it cannot represent; `items` lists every one of them."""

    def __init__(self, message: str, items: list[str]) -> None:
        super().__init__(message)
        self.items = items
