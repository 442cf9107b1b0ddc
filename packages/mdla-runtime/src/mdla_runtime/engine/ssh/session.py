"""A session on the phone: its private work directory, kept alive by a `keeper` process.

The keeper is one long-running remote command (`remote.SESSION`) on the shared connection: it
checks the private directory, removes the work directories of dead sessions, makes this one's
and then waits on its stdin. Its pid, written in the work directory, is alive exactly as long as
this client's connection: a closed, dropped or `kill -9`ed client ends it, and the next session
removes the directory.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import time

from mdla_runtime.engine.ssh import remote
from mdla_runtime.engine.ssh.spec import SshSpec
from mdla_runtime.errors import TargetError

UNREACHABLE = (
    "Connection refused",
    "No route to host",
    "timed out",
    "Could not resolve",
    "Name or service not known",
)


def classify(stderr: str, host: str, step: str) -> str:
    """The message for an ssh failure (exit 255) during `step`."""
    s = stderr.strip()
    if "Host key verification failed" in s or "IDENTIFICATION HAS CHANGED" in s:
        return (
            f"{host}'s host key is unknown or changed, and ssh runs in batch mode so it cannot "
            "ask; `workbench doctor --on SPEC` prints the command that accepts it"
        )
    if "Permission denied" in s or "Too many authentication failures" in s:
        return f"{host} refused the SSH authentication ({s.splitlines()[-1]}); check the key"
    if any(w in s for w in UNREACHABLE):
        return f"cannot reach {host} over SSH ({s.splitlines()[-1]})"
    return (
        f"the SSH connection to {host} dropped during {step} ({s or 'no message'}); the "
        "remote work directory is removed on the next connection"
    )


def start_session(
    ssh: list[str], spec: SshSpec, command: str
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the keeper; (the keeper, the session's work directory on the phone)."""
    keeper = subprocess.Popen(
        [*ssh, command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert keeper.stdout is not None  # set by PIPE
    assert keeper.stderr is not None
    deadline = time.monotonic() + spec.timeout
    line = b""
    while not line.endswith(b"\n") and time.monotonic() < deadline:
        ready, _, _ = select.select([keeper.stdout], [], [], deadline - time.monotonic())
        if not ready:
            break
        chunk = os.read(keeper.stdout.fileno(), 4096)
        if not chunk:
            break
        line += chunk
    text = line.decode(errors="replace").strip()
    if text.startswith("MDLA_SESSION /"):
        return keeper, text.removeprefix("MDLA_SESSION ")
    _stop(keeper)
    code, err = keeper.returncode, keeper.stderr.read().decode(errors="replace")
    _close_streams(keeper)
    if code == 255:
        raise TargetError(classify(err, spec.host, "work directory"), exit_code=4)
    if remote.UNSAFE in err:
        detail = err.strip().rpartition(f"{remote.UNSAFE}: ")[2]
        raise TargetError(
            f"refusing the engine cache on {spec.host}: {detail}; it must be a directory of "
            "this user's, not a symlink, mode 0700 (chmod 700 it, remove it, or give another "
            "?base=DIR)",
            exit_code=4,
        )
    raise TargetError(
        f"work directory on {spec.host} failed (exit {code}): "
        f"{err.strip() or text or 'no message'}",
        exit_code=4,
    )


def _stop(keeper: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError, ValueError):
        if keeper.stdin:
            keeper.stdin.close()  # the remote `cat` sees end-of-file and the keeper exits
    try:
        keeper.wait(timeout=10)
    except subprocess.TimeoutExpired:
        keeper.kill()
        keeper.wait(timeout=10)


def _close_streams(keeper: subprocess.Popen[bytes]) -> None:
    for stream in (keeper.stdin, keeper.stdout, keeper.stderr):
        with contextlib.suppress(OSError, ValueError):
            if stream:
                stream.close()


def close_session(
    ssh: list[str],
    control: str,
    workdir: str = "",
    keeper: subprocess.Popen[bytes] | None = None,
) -> None:
    """End the keeper, remove the work directory, stop the ControlMaster, remove `control`."""
    try:
        if keeper is not None:
            _stop(keeper)
            _close_streams(keeper)
        if workdir:
            subprocess.run(
                [*ssh, remote.command(remote.REMOVE, workdir)],
                capture_output=True,
                timeout=30,
                check=False,
            )
        subprocess.run(
            [*ssh[:-2], "-O", "exit", *ssh[-2:]], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        pass  # best effort: the next connection removes the work directories of dead sessions
    shutil.rmtree(control, ignore_errors=True)
