from __future__ import annotations

from tests.ssh.sshd_server import sshd

__all__ = ["sshd"]
