"""Atomic file output: a reader, a crash or a Ctrl-C sees the old file or the new one, never half.

    write_atomic(path, data)   # temp file beside `path`, fsync, then rename over it

The temporary file lives in the destination's directory (a rename is atomic only within one
file system) and is removed on any failure, KeyboardInterrupt included. The result gets the
permissions an ordinary `open(path, "w")` would (0666 less the umask), not mkstemp's 0600.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    out = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out
