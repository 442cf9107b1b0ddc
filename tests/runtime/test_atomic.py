"""`write_atomic`: the old file or the new one, never half, and no temporary file left behind."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from mdla_runtime import write_atomic
from mdla_runtime.atomic import commit_staged, stage


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


def test_a_full_disk_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "out.bin"

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match=r"No space left on device: '.*out\.bin'") as info:
        write_atomic(path, b"new")
    assert info.value.errno == errno.ENOSPC
    assert info.value.filename == str(path)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_in_the_way_says_so(tmp_path: Path) -> None:
    (tmp_path / "x.mdla").mkdir()
    with pytest.raises(IsADirectoryError, match=r"Is a directory: '.*x\.mdla'"):
        write_atomic(tmp_path / "x.mdla", b"new")
    assert [p.name for p in tmp_path.iterdir()] == ["x.mdla"]


def test_a_missing_directory_names_the_file_not_the_temporary(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        write_atomic(tmp_path / "nope" / "out.bin", b"new")
    assert info.value.filename == str(tmp_path / "nope" / "out.bin")


def test_an_executable_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "tool", b"#!", mode=0o777)
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "tool").stat().st_mode) == 0o755


def test_a_staged_file_is_written_now_and_in_place_only_when_committed(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    tmp = stage(path, lambda f: (f.write(b"ne"), f.write(b"w")))
    assert tmp.parent == tmp_path
    assert tmp.read_bytes() == b"new"
    assert path.read_bytes() == b"old"
    assert commit_staged(tmp, path) == path
    assert path.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_failing_writer_leaves_no_temporary_and_names_the_path(tmp_path: Path) -> None:
    def full(_f: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OSError, match=r"No space left on device: '.*out\.bin'"):
        stage(tmp_path / "out.bin", full)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_commit_removes_the_staged_file_and_names_the_path(tmp_path: Path) -> None:
    """The rename over a non-empty directory fails: the staged file is gone, the error names
    the destination, and what was there is untouched."""
    path = tmp_path / "out.bin"
    (path / "kept").mkdir(parents=True)
    tmp = stage(tmp_path / "elsewhere.bin", lambda f: f.write(b"new"))
    with pytest.raises(OSError, match=r"out\.bin"):
        commit_staged(tmp, path)
    assert not tmp.exists()
    assert (path / "kept").is_dir()
