"""Exit codes and the one place where package errors become one stderr line.

1  bad input or model (IRError other than UnsupportedError, ZooError, QuantError, ManifestError,
   TargetDataError, CompileError, unreadable files)
2  usage (Typer/Click's own, WorkbenchError(..., USAGE), a malformed --on: TargetSpecError,
   a malformed model spec or --arg: SpecError, mdla_compile's OptionError), and an optional
   dependency this install lacks (torch, torchvision, scikit-image, a zoo model's package,
   ai-edge-litert: `missing_module` and `needs_install`; the line names the pip command)
3  unsupported on the target (LegalizeError, UnsupportedError: a construct the importer cannot
   represent, UnknownDeviceError, UNMAPPABLE from the device)
4  device or connection (TargetError otherwise, WitnessError)
130  interrupted (Ctrl-C): outputs are written atomically, so each is the old file or the new one
     (`mdla_runtime.interrupt`: the discipline lipread shares)
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from typer.exceptions import TyperException

from mdla_compile import CompileError, OptionError
from mdla_ir import IRError, UnsupportedError
from mdla_legalize import LegalizeError
from mdla_quant import QuantError
from mdla_runtime import ExportError, ManifestError, TargetError, TargetSpecError, interrupt
from mdla_runtime.errors import FutureVersionError
from mdla_runtime.export.writer import UnexportableOpError, UnexportableRoundingError
from mdla_runtime.interrupt import INTERRUPTED as INTERRUPTED  # re-exported: the apps' code
from mdla_runtime.interrupt import interrupt_guard as interrupt_guard
from mdla_target import TargetDataError, UnknownDeviceError
from mdla_witness import WitnessError
from mdla_zoo import ZooError
from mdla_zoo.errors import SpecError

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
    if needs_install(exc):
        return USAGE
    if isinstance(exc, LegalizeError | UnsupportedError | UnknownDeviceError):
        return UNSUPPORTED
    if isinstance(exc, UnexportableOpError | UnexportableRoundingError):
        return UNSUPPORTED
    if isinstance(exc, TargetSpecError | SpecError | OptionError):
        return USAGE
    if isinstance(exc, TargetError):
        if exc.result == "UNMAPPABLE" or exc.exit_code == UNSUPPORTED:
            return UNSUPPORTED
        return BAD_INPUT if exc.exit_code == BAD_INPUT else DEVICE
    if isinstance(exc, WitnessError):
        return DEVICE
    if isinstance(
        exc,
        IRError
        | ZooError
        | QuantError
        | ManifestError
        | ExportError
        | TargetDataError
        | OSError
        | CompileError,
    ):
        return BAD_INPUT
    return None


def needs_install(exc: BaseException) -> bool:
    """A package's error for an optional module this install lacks: the zoo's model packages,
    the sample photos' scikit-image, export's ai-edge-litert. Each is raised from the
    ModuleNotFoundError and names its pip command; an import failing inside a user's model
    spec is not one (the zoo raises that `from None`)."""
    wraps = isinstance(exc, ZooError | CompileError | ExportError)
    return wraps and isinstance(exc.__cause__, ModuleNotFoundError)


NEEDS = {  # a module a torch-free install lacks: what needs it
    "torch": "compiling, checking or validating a model spec needs PyTorch",
    "torchvision": "compiling, checking or validating a model spec needs torchvision",
    "skimage": "the sample photos need scikit-image",
}


def missing_module(exc: BaseException) -> WorkbenchError | None:
    """The one line for a module this install lacks (a torch-free `pip install mdla-workbench`
    runs .mdla files; a model spec needs the `models` extra), exit 2: the install, not the
    model or the target, is what to change; None for anything else."""
    if not isinstance(exc, ModuleNotFoundError):
        return None
    top = (exc.name or "").split(".")[0]
    if top not in NEEDS:
        return None
    return WorkbenchError(
        f"{NEEDS[top]}, which is not installed: pip install 'mdla-workbench[models]' (running, "
        "inspecting and witnessing a .mdla need none of it)",
        USAGE,
    )


SHOWN_ITEMS = 3  # a report of many ops (LegalizeError, UnsupportedError) shows its first ones


def one_line(exc: BaseException) -> str:
    """The message of `exc` on one line (multi-line reports joined with `; `); a report of more
    than SHOWN_ITEMS ops or constructs names the first ones and says where the rest are."""
    if isinstance(exc, FutureVersionError):
        return plain(version_line(exc))
    parts = [p.strip() for p in str(exc).splitlines() if p.strip()]
    items = getattr(exc, "items", None)
    advice = getattr(exc, "advice", ())
    fix = [parts.pop()] if advice and parts and parts[-1] == f"fix: {advice[0]}" else []
    if isinstance(items, list) and len(items) > SHOWN_ITEMS and len(parts) > SHOWN_ITEMS:
        more = len(parts) - 1 - SHOWN_ITEMS
        parts = [
            *parts[: 1 + SHOWN_ITEMS],
            f"and {more} more (`workbench check MODEL` lists them, one row each)",
        ]
    parts += fix  # the way out (`--cpu auto`) survives the shortening
    text = "; ".join(parts) or type(exc).__name__
    return plain(text.replace(":;", ":"))


def version_line(exc: FutureVersionError) -> str:
    """A .mdla of another format: the file and its format first (the reader's kind and byte
    offset say nothing to a user), with the rebuild command for this file."""
    where = f"`{exc.path}`" if exc.path else "the file"
    out = f" -o {exc.path}" if exc.path else ""
    why = exc.why.replace("`workbench compile`", f"`workbench compile MODEL{out}`")
    return f"{where} is {why.replace(' is newer than', ', newer than')}"


_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


def plain(text: str) -> str:
    """`text` without terminal escape sequences (a library's colours) or other control
    characters: an error line reads the same in a terminal, a pipe, a log and CI."""
    text = _ESCAPES.sub("", text)
    return "".join(ch if ch.isprintable() else " " for ch in text)


@contextmanager
def reported(debug: bool = False) -> Iterator[None]:
    """Turn a known error into `error: <one line>` on stderr and its exit code."""
    interrupt.clear()  # each command starts without a Ctrl-C on record
    try:
        yield
    except (typer.Exit, typer.Abort, TyperException):
        raise
    except KeyboardInterrupt as exc:
        sys.stderr.write("error: interrupted\n")
        raise typer.Exit(INTERRUPTED) from exc
    except Exception as exc:
        if interrupt.interrupted(exc):  # a library wrapped or swallowed the Ctrl-C
            sys.stderr.write("error: interrupted\n")
            raise typer.Exit(INTERRUPTED) from exc
        exc = missing_module(exc) or exc
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
