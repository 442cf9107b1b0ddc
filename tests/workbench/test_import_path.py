"""`--import fx|export|auto` (check, compile, validate): a model torch.fx cannot trace imports
through torch.export, and the note says which path imported it and why."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app

MODELS = """
import torch
from torch import nn


class Untraceable(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 1)
        self.out = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        if x.shape[-1] % 8:
            raise ValueError("the width must be a multiple of 8")
        a, b = list(self.conv(x).chunk(2, 1))
        return self.out(torch.cat([b, torch.relu(a)], 1))


class ExportShy(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        if torch.compiler.is_exporting():
            raise RuntimeError("no export here")
        return torch.relu(self.conv(x))


def untraceable():
    return Untraceable().eval(), torch.zeros(1, 3, 16, 16)


def shy():
    return ExportShy().eval(), torch.zeros(1, 3, 16, 16)
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("import_path") / "import_models.py"
    path.write_text(textwrap.dedent(MODELS))
    return path


def test_fx_cannot_trace_it_and_export_imports_it(runner: CliRunner, models: Path) -> None:
    spec = f"{models}:untraceable"
    fx = runner.invoke(app, ["check", spec])
    assert fx.exit_code != 0
    assert "torch.fx cannot trace" in fx.output + fx.stderr
    auto = runner.invoke(app, ["check", spec, "--import", "auto"])
    assert auto.exit_code == 0, auto.output + auto.stderr
    assert "note: imported via torch.export" in auto.stderr


def test_auto_says_why_export_was_refused(runner: CliRunner, models: Path) -> None:
    result = runner.invoke(app, ["check", f"{models}:shy", "--import", "auto"])
    assert result.exit_code == 0, result.output + result.stderr
    (note,) = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert note.startswith("note: torch.export refused: RuntimeError: no export here at ")
    assert "import_models.py:" in note
    assert note.endswith("; imported via torch.fx")


def test_compile_takes_the_path_too(runner: CliRunner, models: Path, tmp_path: Path) -> None:
    out = tmp_path / "u.mdla"
    args = ["compile", f"{models}:untraceable", "--import", "export", "--calib", "random"]
    result = runner.invoke(app, [*args, "--count", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    assert "note: imported via torch.export" in result.stderr
    assert out.is_file()
