"""The tree's size at a glance (`make test` prints it): lines per distribution, their share, and the
signals that say a module or function holds two things.

    python scripts/sz.py            # the table
    python scripts/sz.py --json     # the same figures, for a closing note or a diff between trees

Lines are all lines (as `wc -l` counts them) of product code (`packages/*/src`, `apps/*/src`) and of
`bench/`, Python and C apart.
A Python function's length is its last line minus its `def` line plus one (nested functions count
inside their parent too); C functions are not measured.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG_FILE = 400  # STYLE.md: a module past 400 lines is telling you it holds two things
BIG_FUNCTION = 60


def _dists(root: Path) -> list[Path]:
    found = (p for pattern in ("packages/*", "apps/*") for p in root.glob(pattern))
    return [*sorted(p for p in found if p.is_dir()), root / "bench"]


def _lines(path: Path) -> int:
    return len(path.read_text(errors="replace").splitlines())


def _sources(dist: Path) -> list[Path]:
    src = dist / "src" if (dist / "src").is_dir() else dist
    return sorted(p for p in src.rglob("*") if p.suffix in {".py", ".c", ".h"} and p.is_file())


def _long_functions(path: Path, root: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
            n = node.end_lineno - node.lineno + 1
            if n > BIG_FUNCTION:
                out.append((f"{path.relative_to(root)}:{node.lineno} {node.name}", n))
    return out


def measure(root: Path = ROOT) -> dict[str, object]:
    rows: dict[str, dict[str, int]] = {}
    big_files: list[tuple[str, int]] = []
    long_functions: list[tuple[str, int]] = []
    for dist in _dists(root):
        if not dist.is_dir():
            continue
        py = c = 0
        for path in _sources(dist):
            n = _lines(path)
            if path.suffix == ".py":
                py += n
                long_functions += _long_functions(path, root)
            else:
                c += n
            if n > BIG_FILE:
                big_files.append((str(path.relative_to(root)), n))
        rows[dist.name] = {"python": py, "c": c}
    return {
        "dists": rows,
        "files_over_400": sorted(big_files, key=lambda r: -r[1]),
        "functions_over_60": sorted(long_functions, key=lambda r: -r[1]),
    }


def _table(m: dict[str, object]) -> str:
    dists: dict[str, dict[str, int]] = m["dists"]  # type: ignore[assignment]
    total = sum(r["python"] + r["c"] for r in dists.values()) or 1
    out = [f"{'distribution':<16} {'python':>7} {'c':>7} {'total':>7} {'share':>6}"]
    for name, r in sorted(dists.items(), key=lambda kv: -(kv[1]["python"] + kv[1]["c"])):
        n = r["python"] + r["c"]
        out.append(f"{name:<16} {r['python']:>7} {r['c']:>7} {n:>7} {100 * n / total:>5.1f}%")
    out.append(f"{'total':<16} {'':>7} {'':>7} {total:>7}")
    big: list[tuple[str, int]] = m["files_over_400"]  # type: ignore[assignment]
    long: list[tuple[str, int]] = m["functions_over_60"]  # type: ignore[assignment]
    out.append(f"files over {BIG_FILE} lines: {len(big)}")
    out += [f"  {n:>5}  {name}" for name, n in big]
    out.append(f"functions over {BIG_FUNCTION} lines: {len(long)}")
    out += [f"  {n:>5}  {name}" for name, n in long]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    m = measure()
    sys.stdout.write((json.dumps(m, indent=1) if args.json else _table(m)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
