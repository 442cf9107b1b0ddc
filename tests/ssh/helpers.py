"""What the SSH tests share: the target URL of the loopback "phone" and its inputs."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import numpy as np

from mdla_emu import build_emulator
from tests.ssh.sshd_server import Server


def url(server: Server, phone: dict[str, Path], **extra: str) -> str:
    """ssh://user@127.0.0.1:port?... for `server`, options (URL-quoted) overriding the
    defaults; an empty value leaves that option out."""
    opts = {
        "key": str(server.key),
        "config": str(server.config),
        "lib": str(build_emulator()),
        "base": str(phone["base"]),
        "env": f"MDLA_EMU_SYSFS={phone['node']}",
        **extra,
    }
    query = "&".join(f"{k}={quote(v, safe='/=:')}" for k, v in opts.items() if v)
    return f"ssh://{server.user}@127.0.0.1:{server.port}?{query}"


def inputs() -> list[np.ndarray]:
    return [np.random.default_rng(1).normal(size=(1, 3, 6, 6)).astype(np.float32)]
