"""`workbench engine --build` (issue 21): mdla-engine built from the flat sources (generated
headers included) with the compiler given, into the file given: for this machine it lists the
emulator's devices; cross-built for aarch64 it is an aarch64 ELF that runs under qemu; a missing
compiler or a misused flag is a usage error (exit 2), a failing compile exit 1."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdla_runtime import save
from mdla_runtime.testing import chain_qgraph
from workbench.cli import app
from workbench.engine_build import machine_of


def test_build_for_this_machine_runs(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "bin" / "mdla-engine"
    result = runner.invoke(app, ["engine", "--build", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out)
    assert "for x86-64" in result.stderr or "for aarch64" in result.stderr
    lib = runner.invoke(app, ["engine", "--emulator"]).stdout.strip()
    proc = subprocess.run([out, "--devices", "--lib", lib], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "mtk-mdla" in proc.stdout.split()


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None, reason="no cross compiler")
def test_cross_build_for_a_phone_is_an_aarch64_engine(tmp_path: Path) -> None:
    out = tmp_path / "mdla-engine"
    args = ["engine", "--build", "--cc", "aarch64-linux-gnu-gcc", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "built with aarch64-linux-gnu-gcc for aarch64" in result.stderr
    assert machine_of(out) == "aarch64"
    manifest = save(chain_qgraph(), tmp_path / "chain.mdla")
    qemu = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", str(out), str(manifest), "--check"]
    proc = subprocess.run(qemu, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_build_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["engine", "--build", "--cc", "no-such-cc", "-o", "x"])
    assert missing.exit_code == 2
    assert "--cc no-such-cc: no such compiler" in missing.stderr
    assert runner.invoke(app, ["engine", "--cc", "cc"]).exit_code == 2  # --cc without --build
    assert runner.invoke(app, ["engine", "--build", "--path"]).exit_code == 2
    assert runner.invoke(app, ["engine", "--build", "-o", str(tmp_path)]).exit_code == 2
    fake = tmp_path / "failcc"
    fake.write_text("#!/bin/sh\necho 'fatal: no' >&2\nexit 1\n")
    fake.chmod(0o755)
    failed = runner.invoke(app, ["engine", "--build", "--cc", str(fake), "-o", "x"])
    assert failed.exit_code == 1
    assert "could not build mdla-engine (exit 1): fatal: no" in failed.stderr


def test_a_bad_cc_in_the_environment_is_named_as_cc_not_as_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", f"gcc; touch {tmp_path / 'X'}")
    result = CliRunner().invoke(app, ["engine", "--build", "-o", str(tmp_path / "e")])
    assert result.exit_code == 2
    assert "$CC='gcc; touch" in result.stderr
    assert "--cc" not in result.stderr
    assert not (tmp_path / "X").exists()


def test_a_failed_write_keeps_the_old_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The built engine goes through the one atomic writer: a full disk leaves the old file
    (not a 0-byte one) and the error names the path."""
    out = tmp_path / "mdla-engine"
    out.write_bytes(b"old engine")
    real_fsync = os.fsync

    def full(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path / ".mdla-engine.")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    result = CliRunner().invoke(app, ["engine", "--build", "-o", str(out)])
    assert result.exit_code == 1
    assert f"No space left on device: '{out}'" in result.stderr
    assert out.read_bytes() == b"old engine"
    assert [p.name for p in tmp_path.iterdir()] == ["mdla-engine"]
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert CliRunner().invoke(app, ["engine", "--build", "-o", str(out)]).exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) & 0o111


def test_machine_of_reads_the_elf_header(tmp_path: Path) -> None:
    arm = tmp_path / "arm"
    arm.write_bytes(b"\x7fELF\x02\x01" + bytes(12) + (183).to_bytes(2, "little") + bytes(8))
    assert machine_of(arm) == "aarch64"
    text = tmp_path / "script"
    text.write_text("#!/bin/sh\n")
    assert machine_of(text) == "?"
