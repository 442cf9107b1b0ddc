"""Exit codes and the one place where package errors become one stderr line.

1  bad input or model (IRError, QuantError, ManifestError, unreadable files)
2  usage (Typer/Click's own, and WorkbenchError(..., USAGE))
3  unsupported on the target (LegalizeError, UNMAPPABLE from the device)
4  device or connection (TargetError otherwise, WitnessError)
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from typer.exceptions import TyperException

from mdla_ir import IRError
from mdla_legalize import LegalizeError
from mdla_quant import QuantError
from mdla_runtime import ExportError, ManifestError, TargetError
from mdla_witness import WitnessError

BAD_INPUT, USAGE, UNSUPPORTED, DEVICE = 1, 2, 3, 4


class WorkbenchError(Exception):
    """An error the workbench itself detects, with its exit code."""

    def __init__(self, message: str, exit_code: int = BAD_INPUT) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def exit_code(exc: BaseException) -> int | None:
    """The exit code of a known error, or None for an unexpected one (a bug)."""
    if isinstance(exc, WorkbenchError):
        return exc.exit_code
    if isinstance(exc, LegalizeError):
        return UNSUPPORTED
    if isinstance(exc, TargetError):
        if exc.result == "UNMAPPABLE" or exc.exit_code == UNSUPPORTED:
            return UNSUPPORTED
        return BAD_INPUT if exc.exit_code == BAD_INPUT else DEVICE
    if isinstance(exc, WitnessError):
        return DEVICE
    if isinstance(exc, IRError | QuantError | ManifestError | ExportError | OSError):
        return BAD_INPUT
    return None


def one_line(exc: BaseException) -> str:
    """The message of `exc` on one line (multi-line reports joined with `; `)."""
    parts = [p.strip() for p in str(exc).splitlines() if p.strip()]
    text = "; ".join(parts) or type(exc).__name__
    return text.replace(":;", ":")


@contextmanager
def reported(debug: bool = False) -> Iterator[None]:
    """Turn a known error into `error: <one line>` on stderr and its exit code."""
    try:
        yield
    except (typer.Exit, typer.Abort, TyperException):
        raise
    except Exception as exc:
        code = exit_code(exc)
        if debug:
            traceback.print_exc(file=sys.stderr)
        if code is None:
            sys.stderr.write(
                f"error: internal error {type(exc).__name__}: {one_line(exc)}"
                f"{'' if debug else ' (run with --debug for the traceback)'}\n"
            )
            raise typer.Exit(BAD_INPUT) from exc
        sys.stderr.write(f"error: {one_line(exc)}\n")
        raise typer.Exit(code) from exc
