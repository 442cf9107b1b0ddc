"""Options shared by the commands: --weights, --roi, --on, --debug."""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from lipread.errors import LipreadError, MissingDependencyError
from lipread.roi import Roi, parse_roi
from mdla_runtime import interrupt

T = TypeVar("T")


def roi_option(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        parse_roi(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return text


def as_roi(text: str | None) -> Roi:
    """The parsed --roi (already validated by its callback); unset is `Roi("default")`."""
    if text is None:
        return Roi("default")
    try:
        return parse_roi(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def target_option(text: str) -> str:
    if text == "emu" or text.startswith(("lib:", "ssh://")):
        return text
    raise typer.BadParameter(f"{text!r}: expected emu, lib:/path/to/libneuron_adapter.so or ssh://")


Weights = Annotated[
    Path | None,
    typer.Option(help="LipNet checkpoint: LipNet-PyTorch .pt state dict or lipread .npz "
                 "(default: the shipped SYNTHETIC DEMO model, which reads rendered mouths only)"),
]  # fmt: skip
RoiOpt = Annotated[
    str | None,
    typer.Option(
        "--roi",
        callback=roi_option,
        metavar="auto|none|X,Y,W,H",
        help="Mouth region: none (already a mouth crop), a fixed box, or auto (MTCNN face "
        "landmarks, tracked; `read` runs its nets on the --on target, torch with --fp32). "
        "Default: none if the frames look like a mouth crop (about 2:1, at most 160 px high), "
        "else auto.",
        show_default=False,
    ),
]
Debug = Annotated[bool, typer.Option(help="Show tracebacks.")]


def fail(exc: LipreadError, debug: bool) -> typer.Exit:
    """Report a lipread error as one stderr line (traceback with --debug); the exit to raise."""
    if debug:
        typer.echo("".join(traceback.format_exception(exc)), err=True)
    typer.echo(f"lipread: error: {plain(str(exc))}", err=True)
    return typer.Exit(exc.exit_code)


# What needs each optional dependency, and the extra that installs it (pyproject.toml).
NEEDS = {
    "torch": ("--fp32, a .pt checkpoint, and compiling the front-end for new --weights", "torch"),
    "facenet_pytorch": ("--roi auto (MTCNN)", "auto"),
    "torchvision": ("--roi auto (MTCNN)", "auto"),
}


def guarded(fn: Callable[[], T], debug: bool) -> T:
    """Run a command body: a LipreadError, a missing optional dependency or an unexpected
    error each become one plain stderr line (the traceback only with --debug). A Ctrl-C, or
    any error after one (a library that swallowed it half-imported, then failed), is
    `interrupted`, exit 130: never blamed on the model (`mdla_runtime.interrupt`)."""
    interrupt.clear()  # each command starts without a Ctrl-C on record
    try:
        result = fn()
        interrupt.check()  # one remembered inside an import: the command did not finish
        return result
    except KeyboardInterrupt:
        raise _interrupted() from None
    except Exception as exc:
        if interrupt.interrupted(exc):
            raise _interrupted() from None
        raise _failure(exc, debug) from None


def _interrupted() -> typer.Exit:
    typer.echo("lipread: error: interrupted", err=True)
    return typer.Exit(interrupt.INTERRUPTED)


def _failure(exc: Exception, debug: bool) -> typer.Exit:
    """The one line for an error (see `guarded`); the exit to raise."""
    if isinstance(exc, LipreadError):
        return fail(exc, debug)
    if isinstance(exc, ModuleNotFoundError):
        top = (exc.name or "").split(".")[0]
        if top not in NEEDS:
            return fail(LipreadError(f"a module is missing: {exc}"), debug)
        what, extra = NEEDS[top]
        missing = MissingDependencyError(
            f"this needs {top} (for {what}), which is not installed: pip install "
            f"'mdla-lipread[{extra}]' "
            "(the shipped demo front-end runs without it)"
        )
        return fail(missing, debug)
    if debug:
        typer.echo("".join(traceback.format_exception(exc)), err=True)
    text = plain(" ".join(str(exc).split()))
    typer.echo(
        f"lipread: error: internal error {type(exc).__name__}: {text}"
        f"{'' if debug else ' (run with --debug for the traceback)'}",
        err=True,
    )
    return typer.Exit(1)


def plain(text: str) -> str:
    """No terminal escape sequences or control characters in an error line."""
    text = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]", "", text)
    return "".join(ch if ch.isprintable() else " " for ch in text)
