"""The witness's one error type (bad arguments; a node that cannot be read is a verdict)."""

from __future__ import annotations


class WitnessError(Exception):
    """Raised for misuse (negative idle time, an empty command result); carries `path`."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path
