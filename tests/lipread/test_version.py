"""`lipread --version` prints the installed distribution's version and exits 0."""

from __future__ import annotations

from importlib.metadata import version

from typer.testing import CliRunner

from lipread.cli import app, route


def test_version() -> None:
    assert route(["--version"]) == ["--version"]  # not taken for a VIDEO
    result = CliRunner().invoke(app, route(["--version"]))
    assert result.exit_code == 0, result.output
    assert result.stdout == f"lipread (mdla-lipread) {version('mdla-lipread')}\n"


def test_version_is_in_the_help() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "--version" in result.stdout
