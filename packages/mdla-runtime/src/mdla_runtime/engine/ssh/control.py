"""The local directory of a session's ssh ControlMaster socket, and cleanup of dead ones.

Each `SshTarget` owns `$TMPDIR/mdla-ssh-XXXXXXXX/` (mode 0700) holding the socket `cm` and
`owner`: its pid and that process's start time. `close()` removes it; a client killed with
`kill -9` cannot, so every new session removes the directories whose owner is gone (dead, or
its pid reused by another process): by liveness, never by age.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "mdla-ssh-"


def _start_time(pid: int) -> str:
    """The process's start time (clock ticks since boot) from /proc; '' where there is none."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _identity(pid: int) -> str:
    return f"{pid} {_start_time(pid)}".strip()


def _alive(owner: str) -> bool:
    pid_text, _, started = owner.strip().partition(" ")
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: not ours to judge
    return not started or _start_time(pid) in ("", started)


def make_control_dir() -> str:
    """A new private control directory for this process, its owner recorded."""
    path = tempfile.mkdtemp(prefix=PREFIX)
    Path(path, "owner").write_text(_identity(os.getpid()) + "\n")
    return path


def remove_stale_control_dirs(tmp: str | None = None) -> list[str]:
    """Remove this user's control directories whose owner process is gone; returns them."""
    removed = []
    for path in Path(tmp or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            st = path.lstat()
            owner = (path / "owner").read_text()
        except OSError:
            continue  # not ours, not a directory, or no owner file: leave it
        if not path.is_dir() or path.is_symlink() or st.st_uid != os.getuid():
            continue
        if _alive(owner):
            continue
        with contextlib.suppress(OSError):
            shutil.rmtree(path)
            removed.append(str(path))
    return removed
