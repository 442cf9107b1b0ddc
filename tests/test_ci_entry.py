"""The CI entry point and the Makefile's split of the suite: `make test` runs every test but the
deep ones, `make deep` runs exactly those, and `.ci/run` runs both, failing on either."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


def _pytest_args() -> list[str]:
    """The arguments `make pytest` gives pytest, the Makefile's variables filled in."""
    text = (ROOT / "Makefile").read_text()
    values = dict(re.findall(r"^(\w+) *\?= *(\S+)$", text, flags=re.M))
    line = next(line for line in _recipe("pytest") if "-m pytest" in line)
    line = re.sub(r"\$\((\w+)\)", lambda m: values.get(m.group(1), m.group(0)), line)
    return shlex.split(line.split("-m pytest", 1)[1])


def _pytest(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """pytest run with `args` in `cwd` (no cache written), asserted to pass."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc


def test_make_test_runs_pytest_on_both_cores_keeping_modules_whole() -> None:
    """Two workers (the 2-core budget machine), each module on one worker, the slowest named;
    and pytest-xdist is among the dev tools that `make` installs into a fresh venv."""
    args = _pytest_args()
    assert args[args.index("-n") + 1] == "2"
    assert args[args.index("--dist") + 1] == "loadscope"
    assert "--durations=25" in args
    pins = (ROOT / "requirements-dev.txt").read_text().splitlines()
    assert any(re.match(r"pytest-xdist\b", pin) for pin in pins)


MODULE = """
import os
import time
from pathlib import Path

import pytest

LOG = Path(__file__).with_name("log.txt")


@pytest.fixture(scope="module")
def built() -> str:
    with LOG.open("a") as f:
        f.write(f"built {__name__} {os.getpid()}\\n")
    return __name__


@pytest.mark.parametrize("i", range(12))
def test_one(built: str, i: int) -> None:
    time.sleep(0.02)
    with LOG.open("a") as f:
        f.write(f"ran {built} {os.getpid()}\\n")
"""


def test_make_tests_command_builds_each_module_fixture_once_over_two_workers(
    tmp_path: Path,
) -> None:
    """`make pytest`'s own arguments on two small modules with a module-scoped fixture (a
    stand-in for a compiled model or a built phone): both workers run tests, each fixture is
    made once (not once per worker), and the slowest tests are still named at the end."""
    if importlib.util.find_spec("xdist") is None:
        pytest.fail("pytest-xdist is not installed: requirements-dev.txt pins it (`make venv`)")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / name).write_text(textwrap.dedent(MODULE))
    proc = _pytest(_pytest_args(), tmp_path)
    assert "24 passed" in proc.stdout
    assert "slowest 25 durations" in proc.stdout
    log = [line.split() for line in (tmp_path / "log.txt").read_text().splitlines()]
    built = sorted(module for what, module, _ in log if what == "built")
    assert built == ["test_a", "test_b"], log
    assert len({pid for what, _, pid in log if what == "ran"}) == 2, log


def test_ci_runs_make_test_then_make_deep_and_stops_on_a_failure() -> None:
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line.strip() for line in script if line.strip() and not line.startswith("#")]
    assert "set -euo pipefail" in commands
    assert commands.index("make test") < commands.index("make deep")


def test_the_deep_checks_are_the_wheels_and_the_libfuzzer_runs() -> None:
    """A marker that silently stopped selecting (a typo, a file renamed) would drop these checks
    from CI without a failure anywhere; one that spread would slow `make test`'s budget."""
    deep = ["tests/test_wheels.py", "tests/runtime/test_fuzz.py"]
    proc = _pytest(["--collect-only", "-q", "-m", "deep", *deep], ROOT)
    chosen = {line.split("[")[0] for line in proc.stdout.splitlines() if "::" in line}
    assert chosen == {
        "tests/test_wheels.py::test_every_package_builds_a_wheel_under_its_distribution_name",
        "tests/test_wheels.py::test_installs_alone_and_imports",
        "tests/runtime/test_fuzz.py::test_libfuzzer_finds_no_crash_in_the_c_reader",
        "tests/runtime/test_fuzz.py::test_libfuzzer_finds_no_crash_in_the_engine",
    }
