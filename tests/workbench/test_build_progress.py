"""A C build (the emulator's, the engine's: tens of seconds on first use) is announced as a
step of the command's progress on stderr, and a cached one is not."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mdla_emu import build
from workbench.output import steps


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MDLA_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "tiny.c"
    path.write_text("int main(void) { return 0; }\n")
    return path


def test_only_a_build_that_compiles_is_announced(source: Path) -> None:
    calls: list[str] = []

    def listener(name: str) -> Callable[[], None]:
        calls.append(f"start {name}")
        return lambda: calls.append(f"end {name}")

    with build.announced(listener):
        first = build.compile_c([source], "tiny")
        again = build.compile_c([source], "tiny")  # cached: nothing to say
    build.compile_c([source], "tiny", flags=("-O1",))  # after the block: not heard
    assert first == again
    assert calls == ["start tiny", "end tiny"]


def test_run_progress_names_the_build(
    source: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    monkeypatch.setenv("COLUMNS", "300")  # the whole description on one line
    with steps():
        build.compile_c([source], "mdla-engine")
    err = capsys.readouterr().err
    assert f"building the engine (C, first use; cached in {source.parent / 'cache'})" in (
        " ".join(err.split())
    )
