"""A build compiles its files side by side (mdla_emu.build: `jobs`, `build_commands`,
`run_build`) and gives the binary one compiler call gives; a failing file stops it before the
link with every failing file's message, and nothing is left in the cache."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mdla_emu.build import (
    BuildError,
    build_commands,
    compile_c,
    find_compiler,
    jobs,
    run_build,
    using_compiler,
)

# Two files named util.c in two folders: their objects must not collide.
SOURCES = {
    "main.c": "int one(void); int two(void);\nint main(void) { return one() * 10 + two(); }\n",
    "a/util.c": "int one(void) { return 4; }\n",
    "b/util.c": "int two(void) { return 2; }\n",
}


def _write(tmp_path: Path, files: dict[str, str]) -> list[Path]:
    out = []
    for name, text in files.items():
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append(path)
    return out


@pytest.mark.parametrize("n", ["1", "2", "8"])
def test_files_of_one_name_build_side_by_side_into_the_one_call_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: str
) -> None:
    monkeypatch.setenv("MDLA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MDLA_BUILD_JOBS", n)
    srcs = _write(tmp_path, SOURCES)
    exe = compile_c(srcs, "prog", flags=("-O2",), generated={})
    assert subprocess.run([str(exe)]).returncode == 42
    one_call = tmp_path / "one"
    cc = find_compiler()
    flags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-O2"]
    subprocess.run([cc, *flags, *map(str, srcs), "-o", str(one_call)], check=True)
    assert one_call.read_bytes() == exe.read_bytes()
    assert not [p for p in exe.parent.iterdir() if p != exe]  # objects and temporaries gone


def test_jobs_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MDLA_BUILD_JOBS", "3")
    assert jobs() == 3
    monkeypatch.delenv("MDLA_BUILD_JOBS")
    assert jobs() >= 1
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("MDLA_BUILD_JOBS", bad)
        with pytest.raises(BuildError, match=f"MDLA_BUILD_JOBS='{bad}'"):
            jobs()


def test_failing_files_are_all_named_and_nothing_is_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDLA_CACHE_DIR", str(tmp_path / "cache"))
    files = dict(SOURCES) | {"a/util.c": "int one(void) { return undeclared_a; }\n"}
    files["b/util.c"] = "int two(void) { return undeclared_b; }\n"
    srcs = _write(tmp_path, files)
    with pytest.raises(BuildError, match="2 of 3 files did not compile") as err:
        compile_c(srcs, "prog", generated={})
    assert "undeclared_a" in str(err.value)
    assert "undeclared_b" in str(err.value)
    assert err.value.returncode not in (0, None)
    assert not list((tmp_path / "cache").rglob("prog"))  # nothing half-written


def test_a_link_failure_is_named_as_the_link(tmp_path: Path) -> None:
    srcs = [str(p) for p in _write(tmp_path, {"main.c": SOURCES["main.c"]})]
    compiles, link = build_commands(find_compiler(), ["-std=c11"], srcs, "prog", (), str(tmp_path))
    assert compiles == [[find_compiler(), "-std=c11", "-c", srcs[0], "-o",
                         str(tmp_path / "000-main.o")]]  # fmt: skip
    with pytest.raises(BuildError, match=r"the link failed \(exit 1") as err:
        run_build(compiles, link, "prog", cwd=str(tmp_path))
    assert "one" in str(err.value)  # the undefined reference


def test_a_chosen_compiler_builds_apart_and_ends_with_its_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`using_compiler` (the cross and sanitizer builds): inside the block the build runs that
    compiler, cached apart from the default one's; after it, the default is back."""
    monkeypatch.setenv("MDLA_CACHE_DIR", str(tmp_path / "cache"))
    srcs = _write(tmp_path, SOURCES)
    native = compile_c(srcs, "prog", generated={})
    calls = tmp_path / "calls"
    wrapper = tmp_path / "mycc"  # a compiler that records each call, then compiles
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {find_compiler()} "$@"\n')
    wrapper.chmod(0o755)
    with using_compiler(str(wrapper)):
        assert find_compiler() == str(wrapper)
        chosen = compile_c(srcs, "prog", generated={})
    assert find_compiler() != str(wrapper)
    assert chosen.parent != native.parent  # its own cache entry
    assert subprocess.run([str(chosen)]).returncode == 42
    assert calls.read_text().count(" -c ") == len(SOURCES)  # every file went through it
    assert compile_c(srcs, "prog", generated={}) == native
