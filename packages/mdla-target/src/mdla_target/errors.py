"""The target package's one error: a target description that cannot be found, read or trusted."""

from __future__ import annotations


class TargetDataError(Exception):
    """Base error of mdla_target; `items` lists each offending name, file or entry."""

    def __init__(self, message: str, items: list[str] | None = None) -> None:
        super().__init__(message)
        self.items = list(items or [])


class UnknownDeviceError(TargetDataError):
    """The target has no device of that name (the message lists the devices it has)."""
