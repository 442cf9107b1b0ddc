"""scripts/sz.py: the size report `make test` prints counts what it says it counts."""

from __future__ import annotations

from pathlib import Path

from scripts.sz import _table, measure


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_counts_lines_big_files_and_long_functions(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(60))  # def + 60 lines = 61
    _write(
        tmp_path / "packages/mdla-a/src/mdla_a/long.py",
        f"def long():\n{body}\ndef short():\n    pass\n",
    )
    _write(tmp_path / "packages/mdla-a/src/mdla_a/k.c", "int x;\n" * 401)
    _write(tmp_path / "apps/app/src/app/ok.py", "def f():\n" + "    y = 1\n" * 59)
    _write(tmp_path / "bench/b.py", "a = 1\n\n")
    _write(tmp_path / "packages/mdla-a/README.md", "not code\n" * 999)
    m = measure(tmp_path)
    assert m["dists"] == {
        "mdla-a": {"python": 64, "c": 401},
        "app": {"python": 60, "c": 0},
        "bench": {"python": 2, "c": 0},
    }
    assert m["files_over_400"] == [("packages/mdla-a/src/mdla_a/k.c", 401)]
    assert m["functions_over_60"] == [("packages/mdla-a/src/mdla_a/long.py:1 long", 61)]
    table = _table(m)
    assert "files over 400 lines: 1" in table
    assert "functions over 60 lines: 1" in table
