"""`make demo`'s output is shown twice, in README.md and in apps/workbench/README.md: it must be
the same run (issue 21: the two READMEs gave different timings for the same demo), and the
time the workbench README's heading quotes must be the one that run printed."""

from __future__ import annotations

import re

from tests.readme import ROOT, blocks

FIRST = "1. compile efficientnet_lite0"


def demo_run(text: str) -> list[str]:
    """The demo's lines in a README's code blocks: from its first step to `done in N s`."""
    for _, _, body in blocks(text):
        lines = body.splitlines()
        if lines and lines[0].startswith(FIRST):
            end = next(i for i, line in enumerate(lines) if line.startswith("done in "))
            return lines[: end + 1]
    raise AssertionError(f"no block starting {FIRST!r}")


def test_both_readmes_show_one_demo_run() -> None:
    root = (ROOT / "README.md").read_text(encoding="utf-8")
    workbench = (ROOT / "apps/workbench/README.md").read_text(encoding="utf-8")
    run = demo_run(root)
    assert demo_run(workbench) == run
    done = re.fullmatch(r"done in (\d+) s", run[-1])
    assert done is not None
    heading = re.search(r"^## `make demo` \(.*?(\d+) s on \d cores\)$", workbench, re.M)
    assert heading is not None
    assert heading.group(1) == done.group(1)


def test_the_reader_takes_the_first_demo_block_only() -> None:
    text = "```\nother\n```\n```\n1. compile efficientnet_lite0 x\n2. y\ndone in 9 s\nafter\n```\n"
    assert demo_run(text) == ["1. compile efficientnet_lite0 x", "2. y", "done in 9 s"]
