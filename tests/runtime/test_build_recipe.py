"""One engine build recipe: the local build, `workbench engine --build` and a phone's own build
over SSH (remote.BUILD) use the same flags, libraries and compiler search order
(mdla_runtime.build: `flat_build_command`, `shell_build_script`, mdla_emu's `COMPILERS`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mdla_emu.build import COMPILERS, find_compiler
from mdla_runtime.build import (
    BASE_FLAGS,
    ENGINE_FLAGS,
    ENGINE_LIBS,
    engine_source_names,
    engine_sources,
    flat_build_command,
    shell_build_script,
)
from mdla_runtime.engine.ssh import remote


def test_the_phone_runs_the_same_recipe() -> None:
    assert shell_build_script() in remote.BUILD
    line = next(s for s in shell_build_script().splitlines() if s.startswith('"$CC_"'))
    flags, libs = " ".join((*BASE_FLAGS, *ENGINE_FLAGS)), " ".join(ENGINE_LIBS)
    assert line == f'"$CC_" {flags} -I. "$@" -o mdla-engine {libs}; chmod 700 mdla-engine'
    cmd = flat_build_command("cc")
    assert cmd == ["cc", *BASE_FLAGS, *ENGINE_FLAGS, "-I.", *engine_source_names(), "-o",
                   "mdla-engine", *ENGINE_LIBS]  # fmt: skip


def _fake_compilers(bin_dir: Path, names: tuple[str, ...], log: Path) -> None:
    bin_dir.mkdir()
    for name in names:
        exe = bin_dir / name
        exe.write_text(f'#!/bin/sh\necho {name} >> "{log}"\n: > mdla-engine\n')
        exe.chmod(0o755)


@pytest.mark.parametrize("present", [("gcc", "clang"), ("clang",), ("cc", "clang")])
def test_the_shell_recipe_searches_compilers_in_the_local_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, present: tuple[str, ...]
) -> None:
    """With only `present` on PATH the phone's script picks the compiler find_compiler picks."""
    log = tmp_path / "log"
    _fake_compilers(tmp_path / "bin", present, log)
    tools = tmp_path / "tools"  # what the script needs besides a compiler, and nothing else
    tools.mkdir()
    (tools / "chmod").symlink_to(shutil.which("chmod") or "/bin/chmod")
    path = f"{tmp_path / 'bin'}:{tools}"
    env = {k: v for k, v in os.environ.items() if k != "CC"} | {"PATH": path}
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        ["/bin/sh", "-c", shell_build_script(), "sh", "a.c"], cwd=work, env=env, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
    monkeypatch.setenv("PATH", path)
    monkeypatch.delenv("CC", raising=False)
    assert log.read_text().split() == [Path(find_compiler()).name]
    assert Path(find_compiler()).name == next(c for c in COMPILERS if c in present)


def test_the_shell_recipe_builds_an_engine_that_runs(tmp_path: Path) -> None:
    for name, blob in engine_sources().items():
        (tmp_path / name).write_bytes(blob)
    env = os.environ | {"CC": find_compiler()}
    proc = subprocess.run(
        ["sh", "-c", shell_build_script(), "sh", *engine_source_names()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([str(tmp_path / "mdla-engine"), "--help"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "mdla-engine" in run.stdout + run.stderr
