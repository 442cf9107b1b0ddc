"""`workbench check` on the issue-15 decoder models: every op maps, and the ops that map only on
an assumption (never measured on the silicon) are named, one line each."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app

MODELS = Path(__file__).resolve().parents[1] / "models_decoders.py"


@pytest.mark.parametrize(
    ("factory", "assumed"),
    [
        ("pnet", ["PRELU"]),
        ("unet", ["RESIZE_NEAREST_NEIGHBOR", "TRANSPOSE_CONV_2D"]),
        ("espcn", ["DEPTH_TO_SPACE"]),
    ],
)
def test_check_names_the_assumed_ops(factory: str, assumed: list[str]) -> None:
    result = CliRunner().invoke(app, ["check", f"{MODELS}:{factory}", "--legalized"])
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    notes = [line for line in lines if line.startswith("assumed:")]
    assert sorted(n.split()[1] for n in notes) == assumed
    assert all("maps on an assumption" in n for n in notes)
