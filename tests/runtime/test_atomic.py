"""`write_atomic`: the old file or the new one, never half, and no temporary file left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mdla_runtime import write_atomic


def test_replaces_the_file_with_ordinary_permissions(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    umask = os.umask(0o022)
    try:
        assert write_atomic(path, b"new") == path
    finally:
        os.umask(umask)
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # not mkstemp's 0600
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failure_keeps_the_old_file_and_removes_the_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")

    def fail(*_args: object) -> None:
        raise failure

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(type(failure)):
        write_atomic(path, b"new")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]
