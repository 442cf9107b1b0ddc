"""The CI entry point and the Makefile's split of the suite: `make test` runs every test but the
deep ones, `make deep` runs exactly those, and `.ci/run` runs both, failing on either."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _recipe(target: str) -> list[str]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        body.append(line.strip())
    return body


def test_make_test_leaves_out_exactly_the_deep_checks_and_make_deep_runs_them() -> None:
    assert any('-m pytest -m "not deep"' in line for line in _recipe("pytest"))
    assert any("-m pytest -m deep" in line for line in _recipe("deep"))


def test_ci_runs_make_test_then_make_deep_and_stops_on_a_failure() -> None:
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line.strip() for line in script if line.strip() and not line.startswith("#")]
    assert "set -euo pipefail" in commands
    assert commands.index("make test") < commands.index("make deep")


def test_the_deep_checks_are_the_wheels_and_the_libfuzzer_runs() -> None:
    """A marker that silently stopped selecting (a typo, a file renamed) would drop these checks
    from CI without a failure anywhere; one that spread would slow `make test`'s budget."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            "deep",
            "-p",
            "no:cacheprovider",
            "tests/test_wheels.py",
            "tests/runtime/test_fuzz.py",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    chosen = {line.split("[")[0] for line in proc.stdout.splitlines() if "::" in line}
    assert chosen == {
        "tests/test_wheels.py::test_every_package_builds_a_wheel_under_its_distribution_name",
        "tests/test_wheels.py::test_installs_alone_and_imports",
        "tests/runtime/test_fuzz.py::test_libfuzzer_finds_no_crash_in_the_c_reader",
        "tests/runtime/test_fuzz.py::test_libfuzzer_finds_no_crash_in_the_engine",
    }
