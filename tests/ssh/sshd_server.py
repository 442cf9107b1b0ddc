"""A real OpenSSH server on 127.0.0.1 for the SSH target's tests: throwaway host and user keys,
public-key login only. `sshd` is the session-wide fixture; `start_server` makes extra ones (the
dropped-connection test kills one mid-run)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@dataclass
class Server:
    port: int
    user: str
    key: Path
    config: Path  # an ssh_config whose Host "phone" reaches the server
    root: Path
    process: subprocess.Popen[bytes]
    log: IO[bytes]

    def _children(self) -> list[int]:
        """Per-connection sshd processes (children of the listener), from /proc."""
        kids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.process.pid:
                kids.append(int(stat.parent.name))
        return kids

    def kill_all(self) -> None:
        """Drop every connection at once, as a phone losing its network would."""
        for pid in self._children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.log.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def start_server(root: Path) -> Server:
    if not os.path.exists(SSHD):
        pytest.fail(
            "the OpenSSH server is not installed: apt-get install -y openssh-server "
            "(.ci/run does this)"
        )
    _keygen(root / "host_key")
    _keygen(root / "user_key")
    shutil.copy(root / "user_key.pub", root / "authorized_keys")
    port, user = _free_port(), os.environ.get("USER") or "root"
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\nPidFile {root / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "StrictModes no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n"
        "MaxSessions 50\nMaxStartups 50\n"
    )
    (root / "ssh_config").write_text(  # Host "phone" reaches it; every host skips key checks
        f"Host phone\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n"
        f"  IdentityFile {root / 'user_key'}\n  IdentitiesOnly yes\n"
        "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    log = (root / "sshd.log").open("wb")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(root / "sshd_config")], stderr=log)
    server = Server(port, user, root / "user_key", root / "ssh_config", root, proc, log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return server
        if proc.poll() is not None:
            server.stop()
            pytest.fail(f"sshd exited: {(root / 'sshd.log').read_text()}")
        time.sleep(0.05)
    server.stop()
    pytest.fail("sshd did not start listening within 10 s")


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_server(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()
