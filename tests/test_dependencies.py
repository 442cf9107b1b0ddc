"""Each package declares the first-party packages it imports, and imports those it declares:
the imports are read from its modules' syntax trees (lazy imports inside functions too), the
declarations from its pyproject.toml (dependencies and extras)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted([*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("apps/*/pyproject.toml")])


def distributions() -> dict[str, str]:
    """import name -> distribution name, for every first-party package."""
    out = {}
    for pyproject in FOLDERS:
        dist = tomllib.loads(pyproject.read_text())["project"]["name"]
        (src,) = [
            p for p in (pyproject.parent / "src").iterdir() if p.is_dir() and "." not in p.name
        ]
        out[src.name] = dist
    return out


def imported(src: Path) -> set[str]:
    """The top-level names every module under `src` imports (absolute imports)."""
    names: set[str] = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def declared(pyproject: Path) -> set[str]:
    """The distributions a pyproject names, in its dependencies or any extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    reqs = [*project.get("dependencies", [])]
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0] for r in reqs}


@pytest.mark.parametrize("pyproject", FOLDERS, ids=lambda p: p.parent.name)
def test_first_party_imports_are_the_declared_dependencies(pyproject: Path) -> None:
    dists = distributions()
    own = tomllib.loads(pyproject.read_text())["project"]["name"]
    uses = {dists[n] for n in imported(pyproject.parent / "src") if n in dists} - {own}
    names = {d for d in declared(pyproject) if d in dists.values()}
    assert not uses - names, f"{own} imports {sorted(uses - names)} without declaring them"
    assert not names - uses, f"{own} declares {sorted(names - uses)} and never imports them"


def test_the_reader_sees_lazy_and_from_imports(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import mdla_ir.ops\nfrom mdla_zoo import x\nfrom . import y\n"
        "def f():\n    import mdla_quant\n"
    )
    assert imported(tmp_path) == {"mdla_ir", "mdla_zoo", "mdla_quant"}
