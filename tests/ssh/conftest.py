from __future__ import annotations

from pathlib import Path

import pytest

from mdla_runtime import save
from mdla_runtime.testing import chain_qgraph
from tests.ssh.sshd_server import Server, sshd

__all__ = ["sshd"]


@pytest.fixture(scope="module")
def phone(sshd: Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fake phone filesystem: a work base, and an APU node bound to the apu_top_3 driver."""
    root = tmp_path_factory.mktemp("phone")
    node = root / "sys" / "devices" / "platform" / "190f0000.apu_top"
    (node / "power").mkdir(parents=True)
    driver = root / "sys" / "bus" / "platform" / "drivers" / "apu_top_3"
    driver.mkdir(parents=True)
    (driver / "190f0000.apu_top").symlink_to(node)
    return {"base": root / "base", "sys": root / "sys", "node": node}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save(chain_qgraph(), tmp_path_factory.mktemp("m") / "chain.mdla")
