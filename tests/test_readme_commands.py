"""Every command the READMEs show (README.md, apps/*/README.md, packages/*/README.md) runs as
written and exits as shown, printing the lines the README shows after it (`tests/readme.py`
reads them). Each README's commands run in order in their own temporary folder (its `apps/`
and `packages/` linked in, its `# file.py` python blocks written there), so what they write
lands there. `bench/README.md` is left out: benches are long.

Not run, each for the reason SKIP gives: what needs a phone (ssh://, adb, a vendor adapter),
what sets up or tears down the environment this test runs in, and synopses with placeholders.
A skip that matches no command fails, so the list cannot rot.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lipread.cli import app as lipread_app
from lipread.cli import route
from tests.readme import ROOT, Command, blocks, commands, missing_lines
from workbench.cli import app as workbench_app

READMES = [
    ROOT / "README.md",
    *sorted((ROOT / "apps").glob("*/README.md")),
    *sorted((ROOT / "packages").glob("*/README.md")),
]

SKIP: tuple[tuple[str, str], ...] = (  # (regex over the command, why it is not run here)
    (r"ssh://", "needs a phone (over SSH)"),
    (r"^echo \$\?$", "the exit code of the SSH `doctor` above it"),
    (r"^adb ", "needs a phone (adb)"),
    (r"^source \.venv/bin/activate$|^\.venv/bin/", "the venv `make demo` made: this runs in it"),
    (r"--on lib:/vendor/", "needs a phone's Neuron adapter library"),
    (r"--cc \$NDK/", "needs the Android NDK (the phone's compiler)"),
    (r"--target mt6886-probed\.toml", "needs the target file `probe` writes on the phone"),
    (r"^make (demo|test)$", "sets up .venv and runs the whole suite, this test included"),
    (r"^make wheels$|/tmp/wdemo", "wheels into fresh venvs: tests/test_wheels.py does that"),
    (r"^make fuzz$|fuzz_manifest", "a 10-minute libFuzzer run: CI's fuzz job"),
    (r"^pip install", "installs packages into the environment this test runs in"),
    (
        r"^mkdir adapter|^LITERT=|apply_plugin_main|trace\.txt",
        "LiteRT's plugin against the emulator: tests/runtime/test_litert_plugin.py runs it",
    ),
    (r"^lipread convert LipNet\.pt", "needs a LipNet-PyTorch checkpoint (not shipped)"),
    (r"\[|\bMODEL\b|\bVIDEO\b|OUT\.mdla", "a synopsis: its words in capitals are placeholders"),
)

FILES = {  # files README commands use that the README names instead of showing: copied in
    "my_ssd.py": "tests/workbench/ssd_model.py",  # apps/workbench/README.md: "is one"
    "my_seg.py": "tests/workbench/argmax_models.py",  # the same README's export section
}


def skip_reason(cmd: Command) -> str | None:
    return next((why for pattern, why in SKIP if re.search(pattern, cmd.text)), None)


def all_commands() -> list[Command]:
    return [c for readme in READMES for c in commands(readme)]


def test_every_skip_names_a_command_and_the_rest_run() -> None:
    cmds = all_commands()
    for pattern, why in SKIP:
        assert any(re.search(pattern, c.text) for c in cmds), f"stale skip {pattern!r} ({why})"
    run = [c for c in cmds if skip_reason(c) is None]
    verbs = {c.text.split()[1] for c in run if c.text.startswith("workbench ")}
    assert {"compile", "check", "run", "validate", "witness", "inspect", "probe"} <= verbs
    for c in run:
        assert c.text.split()[0] in ("workbench", "lipread", "python"), c.where


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in ("apps", "packages"):
        (tmp_path / name).symlink_to(ROOT / name)
    for name, source in FILES.items():
        (tmp_path / name).write_bytes((ROOT / source).read_bytes())
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MDLA_PROGRESS", "1")  # the bars a terminal shows, as the README does
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:  # the README's own modules (my_net, ...)
        if (getattr(sys.modules[name], "__file__", None) or "").startswith(str(tmp_path)):
            sys.modules.pop(name, None)


def run(cmd: Command, folder: Path) -> tuple[int, str, str]:
    """(exit code, stdout, everything printed) of one README command."""
    argv = shlex.split(cmd.text)
    runner = CliRunner()
    if argv[0] == "python":  # its own process: `import torch`-free claims hold there
        done = subprocess.run(
            [sys.executable, *argv[1:]], cwd=folder, capture_output=True, text=True, check=False
        )
        return done.returncode, done.stdout, done.stdout + done.stderr
    if argv[0] == "workbench":
        result = runner.invoke(workbench_app, argv[1:])
    else:
        result = runner.invoke(lipread_app, route(argv[1:]))
    # paths it prints under the folder read as the README writes them: `./name`
    return result.exit_code, result.stdout, result.output.replace(str(folder), ".")


@pytest.mark.slow
@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_readme_commands_run_as_shown(readme: Path, folder: Path) -> None:
    text = readme.read_text(encoding="utf-8")
    for _, _, body in blocks(text, "python"):
        name = body.splitlines()[0].removeprefix("# ").strip()
        if name.endswith(".py"):  # a file the commands use, e.g. my_net.py
            (folder / name).write_text(body)
    for cmd in commands(readme):
        if skip_reason(cmd) is not None:
            continue
        code, stdout, output = run(cmd, folder)
        assert code == cmd.exit_code, f"{cmd.where}: {cmd.text}\n{output}"
        if cmd.note.startswith("trimmed") and "--json" in cmd.text:  # the keys it shows
            keys = {m.group(1) for s in cmd.shown if (m := re.match(r' "(\w+)":', s))}
            printed = set(json.loads(stdout))
            assert keys, cmd.where
            assert keys <= printed, f"{cmd.where}: shows keys it does not print: {keys - printed}"
            continue
        missing = missing_lines(cmd.shown, output)
        assert not missing, (
            f"{cmd.where}: {cmd.text}\nthe README shows lines it did not print:\n"
            + "\n".join(missing)
            + f"\n--- printed:\n{output}"
        )


def test_the_reader() -> None:
    text = """## A
```
$ workbench compile a.py:f \\
    --count 2 -o a.mdla    # exit 3
shown line
  ...
$ workbench check a.mdla   # trimmed
```
```
make demo    # a comment
not a command
```
"""
    got = commands(ROOT / "README.md", text)
    assert [(c.line, c.text, c.exit_code, c.note, c.section) for c in got] == [
        (3, "workbench compile a.py:f --count 2 -o a.mdla", 3, "exit 3", "## A"),
        (7, "workbench check a.mdla", 0, "trimmed", "## A"),
        (10, "make demo", 0, "a comment", "## A"),
    ]
    assert got[0].shown == ["shown line", "  ..."]
    assert missing_lines(got[0].shown, "shown line 1.5\n") == ["shown line"]
    assert missing_lines(got[0].shown, "shown  line\n") == []
