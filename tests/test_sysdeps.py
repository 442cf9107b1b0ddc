"""`scripts/sysdeps.sh`, the first thing `make test` runs: on a machine without the system tools
and without root or sudo it stops at once with one line naming the packages and the command."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_make_test_runs_sysdeps_before_anything_else() -> None:
    rule = next(
        line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith("test:")
    )
    assert rule.split()[1] == "sysdeps"


def test_without_tools_or_root_it_stops_with_one_line(tmp_path: Path) -> None:
    setpriv = shutil.which("setpriv")
    if os.getuid() != 0 or setpriv is None:
        pytest.fail("this test drops root with setpriv: run the suite as root (CI does)")
    bare = tmp_path / "bin"  # a PATH with nothing the tests need, and no sudo
    bare.mkdir()
    start = time.monotonic()
    proc = subprocess.run(
        [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash", "-s"],
        input=(ROOT / "scripts" / "sysdeps.sh").read_text(),  # stdin: pytest's tmp is 0700
        capture_output=True,
        text=True,
        env={"PATH": str(bare)},
        timeout=30,
    )
    assert time.monotonic() - start < 5
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for package in ("clang", "gcc-aarch64-linux-gnu", "qemu-user", "valgrind"):
        assert package in lines[0]
    assert "apt-get install -y" in lines[0]
    assert proc.stdout == ""
