"""`--labels FILE` is read up to a bound, never whole: a 1 GiB file (or /dev/zero) is refused
at once, not read for minutes into a MemoryError."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdla_compile import CompileError
from mdla_compile.contract import MAX_LABELS_BYTES, read_labels
from workbench.cli import app


def test_names_one_a_line(tmp_path: Path) -> None:
    (tmp_path / "l.txt").write_bytes(b"cat\r\n\r\ndog\n")
    assert read_labels(tmp_path / "l.txt") == ("cat", "dog")


@pytest.mark.parametrize("where", ["sparse", "/dev/zero"])
def test_a_huge_labels_file_is_refused_without_reading_it(tmp_path: Path, where: str) -> None:
    path = Path(where)
    if where == "sparse":
        path = tmp_path / "labels.txt"
        with path.open("wb") as f:
            f.truncate(1 << 30)  # 1 GiB, no blocks on disk
    with pytest.raises(CompileError, match=f"labels file `{path}` is larger than 4 MiB"):
        read_labels(path)


def test_run_with_a_huge_labels_file_exits_1(
    runner: CliRunner, artifacts: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "labels.txt").write_bytes(b"x\n" * (MAX_LABELS_BYTES // 2 + 1))
    args = ["run", str(artifacts["images"]), "--labels", str(tmp_path / "labels.txt")]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "is larger than 4 MiB" in result.stderr
