"""The commands shown in the READMEs' code blocks, and the output they show: one reader for
every README test (`tests/test_readme_commands.py` runs them all, `tests/workbench/
test_own_model_readme.py` one section with its files).

A command is a `$ ` line of any code block, or, in a block with no `$ ` line, a line whose first
word is a program (`workbench`, `lipread`, `make`, ...): such blocks list commands without
output. A trailing `\\` joins lines; `# exit N` after a command expects exit N; any other
`# ...` after a command is a comment. The lines after a `$ ` command up to the next are the
output it shows; `...` (alone on its line, or after indentation) elides rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).parents[1]
BOX = str.maketrans("", "", "┏┳┓┃┡╇┩│└┴┘━─╭╮╰╯")
PROGRAMS = ("workbench", "lipread", "make", "python", "python3", "pip", "adb", "clang", "ssh")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.S | re.M)


@dataclass
class Command:
    """One README command: where it is, what it runs, the exit code and lines it shows."""

    readme: str  # path relative to the repo root
    line: int  # 1-based line of the command in the README
    text: str  # the command, comment removed, continuation lines joined
    exit_code: int = 0
    shown: list[str] = field(default_factory=list)
    section: str = ""  # the `## ` heading it is under
    note: str = ""  # its comment: `trimmed` says the output shown is cut

    @property
    def where(self) -> str:
        return f"{self.readme}:{self.line}"


def blocks(text: str, lang: str | None = None) -> list[tuple[int, str, str]]:
    """(first body line, language, body) of each fenced block (only `lang`'s if given)."""
    return [
        (text[: m.start()].count("\n") + 2, m.group(1), m.group(2))
        for m in BLOCK.finditer(text)
        if lang is None or m.group(1) == lang
    ]


def section(text: str, heading: str) -> str:
    """The `## heading` section of a README (up to the next `## `)."""
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end > 0 else len(text)]


def _split_comment(line: str) -> tuple[str, int, str]:
    """The command without its trailing `# ...` comment (a `#` after two spaces), the exit
    code a `# exit N` comment names (0 otherwise) and the comment."""
    m = re.search(r"\s{2,}#", line)
    if m is None:
        return line.rstrip(), 0, ""
    note = line[m.end() :].strip()
    code = re.match(r"exit (\d+)", note)
    return line[: m.start()].rstrip(), int(code.group(1)) if code else 0, note


def _headings(text: str) -> list[str]:
    """The `## ` heading each line of `text` is under (index: line number - 1)."""
    out, current = [], ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line
        out.append(current)
    return out


def commands(readme: Path | str, text: str | None = None) -> list[Command]:
    """Every command in `readme`'s code blocks (or in `text`, a part of it), in order."""
    path = Path(readme)
    rel = str(path.relative_to(ROOT)) if path.is_absolute() else str(path)
    full = text if text is not None else path.read_text(encoding="utf-8")
    out: list[Command] = []
    headings = _headings(full)
    for first, lang, body in blocks(full):
        if lang == "python":
            continue
        lines = body.splitlines()
        prompted = any(line.startswith("$ ") for line in lines)
        current: Command | None = None
        pending, start = "", 0
        for i, raw in enumerate(lines):
            if pending:
                raw, pending = pending + " " + raw.strip(), ""
            else:
                start = i
            is_command = raw.startswith("$ ") if prompted else raw.split(" ", 1)[0] in PROGRAMS
            if not is_command:
                if current is not None and prompted:
                    current.shown.append(raw)
                continue
            if raw.rstrip().endswith("\\"):  # continued on the next line
                pending = raw.rstrip()[:-1].rstrip()
                continue
            cmd = raw[2:] if prompted else raw
            cmd, code, note = _split_comment(cmd)
            line = first + start
            current = Command(rel, line, " ".join(cmd.split()), code, [], headings[line - 1], note)
            out.append(current)
    return out


def normal(line: str) -> str:
    """A shown or printed line for comparison: no table borders, times as T, numbers with a
    decimal point as # (timings, sizes, scores vary), whitespace collapsed."""
    line = re.sub(r"\d+:\d\d:\d\d", "T", line.translate(BOX))
    line = re.sub(r"\d+\.\d+", "#", line)
    return " ".join(line.split())


def missing_lines(shown: list[str], printed: str) -> list[str]:
    """The shown lines (but `...` elisions) that the printed output does not contain."""
    got = {normal(line) for line in printed.splitlines()}
    return [s for s in shown if normal(s) and normal(s) != "..." and normal(s) not in got]
