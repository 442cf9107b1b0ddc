"""Shared fixtures: an isolated compile cache and tiny synthetic clips written with PyAV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lipread.render import render_clip
from lipread.video import write_video


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIPREAD_CACHE", str(tmp_path_factory.getbasetemp() / "lipread-cache"))


@pytest.fixture(scope="session")
def short_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 20-frame synthetic clip, 64x128, H.264."""
    path = tmp_path_factory.mktemp("clips") / "synthetic_short.mp4"
    write_video(path, render_clip(("bin", "blue", "at", "a", "one", "now"), 7, 7, frames=20))
    return path


def rand_frames(n: int, h: int = 48, w: int = 64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)
