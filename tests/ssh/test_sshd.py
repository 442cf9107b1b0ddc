"""The loopback OpenSSH server itself works (so SSH target failures are the target's)."""

from __future__ import annotations

import subprocess

from tests.ssh.sshd_server import Server


def test_the_server_accepts_the_test_key(sshd: Server) -> None:
    out = subprocess.run(
        ["ssh", "-F", str(sshd.config), "phone", "echo", "hello"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "hello\n"
