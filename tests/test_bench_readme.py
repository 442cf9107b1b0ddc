"""bench/README.md's commands name scripts that exist and flags those scripts take (issue 21:
docs that cannot drift). The benches run for minutes, so tests/test_readme_commands.py leaves
this README out; this checks what can drift without running them: every `bench/X.py` shown
exists and every `--flag` shown is one its argument parser declares."""

from __future__ import annotations

import re

from tests.readme import ROOT, blocks

README = ROOT / "bench/README.md"
FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]*")


def bench_commands(text: str) -> list[str]:
    """The `.venv/bin/python bench/...` lines of the README's code blocks, continuation lines
    joined and trailing `# ...` comments removed."""
    lines = [
        line
        for _, _, body in blocks(text)
        for line in re.sub(r"\s*\\\n\s*", " ", body).splitlines()
    ]
    return [
        re.split(r"\s{2,}#|\s#\s", line)[0].strip()
        for line in lines
        if line.startswith(".venv/bin/python bench/")
    ]


def declared_flags(source: str) -> set[str]:
    """The options a script's argparse declares: the quoted `--name`s among an add_argument's
    positional arguments (before its first keyword)."""
    calls = re.findall(r"add_argument\((.*?)\)", source, flags=re.S)
    names = [re.split(r"\b\w+\s*=", call)[0] for call in calls]
    return {flag for part in names for flag in re.findall(r"[\"'](--[\w-]+)[\"']", part)}


def test_every_bench_command_names_a_script_and_its_flags() -> None:
    cmds = bench_commands(README.read_text(encoding="utf-8"))
    assert len(cmds) >= 10, cmds
    for cmd in cmds:
        script = ROOT / cmd.split()[1]
        assert script.is_file(), f"bench/README.md shows {cmd!r}: no {script}"
        flags = declared_flags(script.read_text(encoding="utf-8"))
        unknown = set(FLAG.findall(cmd)) - flags
        assert not unknown, f"bench/README.md shows {cmd!r}: {script.name} has no {unknown}"


def test_the_reader() -> None:
    text = (
        "```\n.venv/bin/python bench/a.py --x 1 \\\n    --y-z 2   # note --not-a-flag\n"
        "other line\n```\n"
    )
    assert bench_commands(text) == [".venv/bin/python bench/a.py --x 1 --y-z 2"]
    source = 'p.add_argument("--x", type=int)\np.add_argument(\n    "-y", "--y-z", help="--no")'
    assert declared_flags(source) == {"--x", "--y-z"}
    assert FLAG.findall("[--crops 200] [--size N|MODEL=N] a--b") == ["--crops", "--size"]
