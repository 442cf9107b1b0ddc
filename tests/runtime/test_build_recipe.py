"""One engine build recipe: the local build, `workbench engine --build` and a phone's own build
over SSH (remote.BUILD) use the same flags, libraries and compiler search order
(mdla_runtime.build: `flat_build_commands`, `shell_build_script`, mdla_emu's `COMPILERS`), and
compile their files side by side (mdla_emu.build: `build_commands`, `run_build`, `jobs`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from mdla_emu.build import COMPILERS, find_compiler
from mdla_runtime.build import (
    BASE_FLAGS,
    ENGINE_FLAGS,
    ENGINE_LIBS,
    engine_source_names,
    engine_sources,
    flat_build_commands,
    shell_build_script,
)
from mdla_runtime.engine.ssh import remote


def _recording_compiler(path: Path, calls: Path, fail: str = "") -> None:
    """A compiler that writes its argv (NUL-separated) to a file of its own in `calls` (calls
    run side by side, so no shared log). A compile takes 0.1 s, then creates its -o, or fails
    (exit 1, "nope" on stderr) when it compiles `fail`; a link (no -c) first checks that every
    object it is given exists, else exits 9. Each compile counts the compiles running as it
    starts (itself included) into `calls`/../running.max.* files."""
    calls.mkdir()
    running = calls.parent / "running"
    running.mkdir()
    path.write_text(
        "#!/bin/sh\n"
        f'f=$(mktemp "{calls}/call.XXXXXX")\n'
        'printf "%s\\0" "$@" > "$f"\n'
        'case " $* " in *" -c "*)\n'
        f'  : > "{running}/$$"; ls "{running}" | wc -l > "{calls.parent}/running.max.$$";;\n'
        "esac\n"
        'case " $* " in\n'
        f'  *" -c {fail} "*) sleep 0.1; echo "{fail}: nope" >&2; exit 1;;\n'
        '  *" -c "*) sleep 0.1;;\n'
        '  *) for a in "$@"; do case $a in *.o) [ -e "$a" ] || exit 9;; esac; done;;\n'
        "esac\n"
        'while [ $# -gt 0 ]; do [ "$1" = -o ] && : > "$2"; shift; done\n'
        f'rm -f "{running}/$$"\n'
    )
    path.chmod(0o755)


def _recorded(calls: Path) -> list[list[str]]:
    return [f.read_text().rstrip("\0").split("\0") for f in sorted(calls.iterdir())]


def _phone_build(
    cwd: Path, cc: str, names: Sequence[str], jobs: str = ""
) -> subprocess.CompletedProcess[str]:
    """The phone's build script run in `cwd` on the files `names`, with $CC = `cc`."""
    env = os.environ | {"CC": cc} | ({"MDLA_BUILD_JOBS": jobs} if jobs else {})
    return subprocess.run(
        ["sh", "-c", shell_build_script(), "sh", *names],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("jobs", ["1", "3", "64"])
def test_the_phone_runs_the_same_commands(tmp_path: Path, jobs: str) -> None:
    """The phone's script runs `flat_build_commands`' compiles (any order, `jobs` at a time),
    then its link once they are done, word for word."""
    assert shell_build_script() in remote.BUILD
    calls, cc = tmp_path / "calls", tmp_path / "fakecc"
    _recording_compiler(cc, calls)
    proc = _phone_build(tmp_path, str(cc), engine_source_names(), jobs)
    assert proc.returncode == 0, proc.stderr
    compiles, link = flat_build_commands(str(cc))
    ran = _recorded(calls)
    assert sorted(c for c in ran if "-c" in c) == sorted(c[1:] for c in compiles)
    assert [c for c in ran if "-c" not in c] == [link[1:]]  # after them: its objects existed
    most = max(int(f.read_text()) for f in tmp_path.glob("running.max.*"))
    assert most <= int(jobs)
    flags, names = [*BASE_FLAGS, *ENGINE_FLAGS], engine_source_names()
    objs = [f"{i:03d}-{Path(n).stem}.o" for i, n in enumerate(names)]
    assert compiles == [
        [str(cc), *flags, "-I.", "-c", n, "-o", o] for n, o in zip(names, objs, strict=True)
    ]
    assert link == [str(cc), *flags, *objs, "-o", "mdla-engine", *ENGINE_LIBS]


def test_a_file_that_does_not_compile_stops_the_phone_build_before_the_link(tmp_path: Path) -> None:
    calls, cc = tmp_path / "calls", tmp_path / "fakecc"
    _recording_compiler(cc, calls, fail="b.c")
    proc = _phone_build(tmp_path, str(cc), ["a.c", "b.c", "c.c"], "2")
    assert proc.returncode == 1
    assert "b.c: nope" in proc.stderr
    ran = _recorded(calls)
    assert len(ran) == 3  # every file compiled (its messages shown), no link
    assert all("-c" in c for c in ran)
    assert not (tmp_path / "mdla-engine").exists()


def _fake_compilers(bin_dir: Path, names: tuple[str, ...], log: Path) -> None:
    bin_dir.mkdir()
    for name in names:
        exe = bin_dir / name
        exe.write_text(f'#!/bin/sh\necho {name} >> "{log}"\n: > mdla-engine\n')
        exe.chmod(0o755)


@pytest.mark.parametrize("present", [("gcc", "clang"), ("clang",), ("cc", "clang")])
def test_the_shell_recipe_searches_compilers_in_the_local_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, present: tuple[str, ...]
) -> None:
    """With only `present` on PATH the phone's script picks the compiler find_compiler picks."""
    log = tmp_path / "log"
    _fake_compilers(tmp_path / "bin", present, log)
    tools = tmp_path / "tools"  # what the script needs besides a compiler, and nothing else
    tools.mkdir()
    (tools / "chmod").symlink_to(shutil.which("chmod") or "/bin/chmod")
    path = f"{tmp_path / 'bin'}:{tools}"
    env = {k: v for k, v in os.environ.items() if k != "CC"} | {"PATH": path}
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        ["/bin/sh", "-c", shell_build_script(), "sh", "a.c"], cwd=work, env=env, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
    monkeypatch.setenv("PATH", path)
    monkeypatch.delenv("CC", raising=False)
    called = log.read_text().split()  # one line per compile, one for the link
    assert set(called) == {Path(find_compiler()).name}
    assert len(called) == 2
    assert Path(find_compiler()).name == next(c for c in COMPILERS if c in present)


def test_the_shell_recipe_builds_an_engine_that_runs(tmp_path: Path) -> None:
    for name, blob in engine_sources().items():
        (tmp_path / name).write_bytes(blob)
    proc = _phone_build(tmp_path, find_compiler(), engine_source_names())
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([str(tmp_path / "mdla-engine"), "--help"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "mdla-engine" in run.stdout + run.stderr
