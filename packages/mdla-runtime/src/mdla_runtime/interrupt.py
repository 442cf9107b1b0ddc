"""One Ctrl-C discipline for every command line that runs a model (workbench, lipread).

    with interrupt_guard() as check:   # SIGINT: KeyboardInterrupt, or remembered inside an import
        ...; check(); write_outputs()  # raises KeyboardInterrupt if a Ctrl-C came meanwhile
    interrupted(exc)                   # whether an error is really a Ctrl-C (wrapped or swallowed)

A Ctrl-C that lands inside an import is remembered, not raised there: torch's import runs
Python from C++ callbacks, where an exception aborts the process, and a library that swallows
it half-imported fails later with an odd error (sympy: "module 'sympy' has no attribute
'logic'") that must not be reported as a fault of the model. An app turns any error raised
after a Ctrl-C into "interrupted", exit INTERRUPTED, and checks before writing outputs.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

E = TypeVar("E", bound=BaseException)

INTERRUPTED = 130  # 128 + SIGINT, as shells report it
_SIGINT = threading.Event()  # set by the guard's handler: a Ctrl-C came in this command
_LINE = {"now": b"error: interrupted\n"}  # what a second Ctrl-C in an import says (the app's)


def clear() -> None:
    """Forget any Ctrl-C on record (a command that starts in a process that ran others),
    unless a guard is watching: then the record is this command's own (the entry point's
    guard saw a Ctrl-C land inside an import while the command was being set up)."""
    if signal.getsignal(signal.SIGINT) is not _handler:
        _SIGINT.clear()


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came since `clear()` (one remembered in an import)."""
    if _SIGINT.is_set():
        raise KeyboardInterrupt


def interrupted(exc: BaseException) -> bool:
    """Whether `exc` comes of a Ctrl-C: a KeyboardInterrupt in its cause or context chain, or
    any error after a Ctrl-C the guard remembered (a library swallowed it, then failed)."""
    return _SIGINT.is_set() or in_chain(exc, KeyboardInterrupt) is not None


def in_chain(exc: BaseException, kind: type[E]) -> E | None:
    """The first `kind` among `exc` and the exceptions it was raised from or while handling
    (its cause, else its context, and theirs), or None."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, kind):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


def importing(frame: FrameType | None) -> bool:
    """Whether `frame` runs inside an import (a frame of importlib's bootstrap on its stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


IMPORT_NOTICE = b"interrupted: stopping once the import under way ends (Ctrl-C again: now)\n"


def _handler(signum: int, frame: FrameType | None) -> None:
    again = _SIGINT.is_set()
    _SIGINT.set()
    if not importing(frame):
        raise KeyboardInterrupt
    # Inside an import: remembered; `check()` raises it before any output is written. Said at
    # once (torch's import takes seconds); a second Ctrl-C there ends the process: nothing is
    # being written while modules load, and every output is replaced atomically.
    if again:
        os.write(2, _LINE["now"])
        os._exit(INTERRUPTED)
    os.write(2, IMPORT_NOTICE)


@contextmanager
def interrupt_guard(line: str | None = None) -> Iterator[Callable[[], None]]:
    """Remember every Ctrl-C, even one a library swallows; yields `check`. Call it right before
    writing outputs, so an interrupted command never replaces a file the user abandoned. Off
    the main thread (where signals cannot be handled) `check` does nothing. `line` is the
    app's own interrupted line (`lipread: error: interrupted`), said by a second Ctrl-C in an
    import, which ends the process there; an inner guard keeps its caller's."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    clear()  # the outermost guard starts afresh; an inner one keeps its caller's record
    said = _LINE["now"]
    if line is not None:
        _LINE["now"] = line.encode() + b"\n"
    previous = signal.signal(signal.SIGINT, _handler)
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)
        _LINE["now"] = said
