"""Atomic file output: a reader, a crash or a Ctrl-C sees the old file or the new one, never half.

    write_atomic(path, data)   # temp file beside `path`, fsync, then rename over it
    tmp = stage(path, write)   # the same in two halves, the file written by write(f) ...
    commit_staged(tmp, path)   # ... and renamed later (a sidecar after its main file)

The temporary file lives in the destination's directory (a rename is atomic only within one
file system) and is removed on any failure, KeyboardInterrupt included. The result gets the
permissions an ordinary `open(path, "w")` would (0666 less the umask, or `mode` less the umask:
0o777 for an executable), not mkstemp's 0600. An OSError (a full disk, a directory in the way)
names `path`, never the temporary file and never nothing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomic(path: str | os.PathLike[str], data: bytes, mode: int = 0o666) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    return commit_staged(stage(path, lambda f: f.write(data), mode), path)


def stage(
    path: str | os.PathLike[str], write: Callable[[BinaryIO], object], mode: int = 0o666
) -> Path:
    """The first half of `write_atomic`: `write(file)` fills a temporary file beside `path`
    (flushed, fsynced, given `mode` less the umask); its path, for `commit_staged` to rename
    over `path` (or for the caller to remove). A file written as it is made: no copy of it
    in memory first. On any failure the temporary file is gone and an OSError names `path`."""
    out = Path(path)
    if out.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(out))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent or ".")
    except OSError as exc:
        raise _naming(exc, out) from exc
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, mode & ~umask)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _naming(exc, out) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def commit_staged(tmp: Path, path: str | os.PathLike[str]) -> Path:
    """The second half of `write_atomic`: the staged file `tmp` renamed over `path` (removed
    if that fails); returns the path."""
    out = Path(path)
    try:
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _naming(exc, out) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


def _naming(exc: OSError, path: Path) -> OSError:
    """`exc` again (its subclass kept: OSError picks it from errno), naming `path`."""
    if exc.errno is None:
        return OSError(f"{path}: {exc}")
    return OSError(exc.errno, exc.strerror, str(path))
