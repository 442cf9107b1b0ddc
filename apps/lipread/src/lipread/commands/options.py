"""Options shared by the commands: --weights, --roi, --on, --debug."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from lipread.errors import LipreadError
from lipread.roi import Roi, parse_roi

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
        "landmarks, tracked). Default: none if the frames look like a mouth crop (about 2:1, "
        "at most 160 px high), else auto.",
        show_default=False,
    ),
]
Debug = Annotated[bool, typer.Option(help="Show tracebacks.")]


def fail(exc: LipreadError, debug: bool) -> typer.Exit:
    """Report a lipread error as one stderr line (traceback with --debug); the exit to raise."""
    if debug:
        typer.echo("".join(traceback.format_exception(exc)), err=True)
    typer.echo(f"lipread: error: {exc}", err=True)
    return typer.Exit(exc.exit_code)


def guarded(fn: Callable[[], T], debug: bool) -> T:
    try:
        return fn()
    except LipreadError as exc:
        raise fail(exc, debug) from None
