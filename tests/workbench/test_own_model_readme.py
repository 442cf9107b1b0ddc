"""The README's "Your own model" section names every model form and every command for each;
`tests/test_readme_commands.py` runs the section (with every other README command) as written:
its Python files written to a temporary folder, each command exiting as shown and printing
every line the section shows (`tests/readme.py`: numbers with a decimal point compared as
placeholders, everything else verbatim)."""

from __future__ import annotations

import shlex

from tests.readme import ROOT, Command, commands, section

README = ROOT / "README.md"
HEADING = "## Your own model"


def section_commands() -> list[Command]:
    text = README.read_text(encoding="utf-8")
    return [
        c for c in commands(README) if c.section == HEADING and c.text in section(text, HEADING)
    ]


def test_the_section_names_every_form_and_command() -> None:
    cmds = [c.text for c in section_commands()]
    for spec in ("my_net.py:Net", "net_full.pt", "net.ts", "net.pt2"):
        for verb in ("compile", "validate"):
            named = [c for c in cmds if c.startswith(f"workbench {verb} ")]
            assert any(shlex.split(c)[2].startswith(spec) for c in named), (verb, spec)
    for manifest in ("net.mdla", "full.mdla", "ts.mdla", "pt2.mdla"):
        assert f"workbench check {manifest}" in cmds
        assert any(c.startswith(f"workbench run {manifest} photos/") for c in cmds)


def test_the_section_shows_output_and_an_error_exit() -> None:
    """What the general test compares: shown lines after the commands, one `# exit 1`."""
    cmds = section_commands()
    assert sum(len(c.shown) for c in cmds) > 50
    assert [c.exit_code for c in cmds].count(1) == 1
