"""Shared fixtures of the probe tests: the full catalogue probed once on the emulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdla_runtime import open_target
from workbench.probe import Matrix, catalogue, run_probes

DEVICES = ("mtk-mdla", "mtk-gpu", "mtk-dsp")


@pytest.fixture(scope="session")
def emu_matrix() -> Matrix:
    return run_probes(open_target("emu"), catalogue(), DEVICES, repeat=1)


@pytest.fixture(scope="session")
def probed_file(emu_matrix: Matrix, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workbench.probe import write_target

    return write_target(emu_matrix, tmp_path_factory.mktemp("probe") / "emu-probed.toml")
