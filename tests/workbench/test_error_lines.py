"""Every error is one plain line: an unexpected exception (no escape codes, --debug for the
traceback), Typer's usage errors under CI colours, and lipread without torch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mdla_compile import pipeline as compile_pipeline
from mdla_zoo import ZooError
from workbench.cli import app
from workbench.errors import plain

ESC = "\x1b"
WORKBENCH = str(Path(sys.executable).with_name("workbench"))
SAMPLE = Path(__file__).parents[2] / "apps/lipread/samples"
LIPREAD_WEIGHTS = (
    Path(__file__).parents[2] / "apps/lipread/src/lipread/weights/lipnet_demo_synthetic.npz"
)


def test_plain_strips_escape_sequences_and_control_characters() -> None:
    assert (
        plain("a \x1b[1mbold\x1b[0m\x1b]8;;http://x\x07link\x1b]8;;\x07 b\x07c") == "a boldlink b c"
    )


def test_an_unexpected_exception_is_one_plain_line(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("\x1b[31mWeights only load failed\x1b[0m\nsecond line")

    monkeypatch.setattr(compile_pipeline, "load_source", boom)
    out = str(tmp_path / "x.mdla")
    result = runner.invoke(app, ["compile", "resnet18", "-o", out])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == [
        "error: internal error RuntimeError: Weights only load failed; second line "
        "(run with --debug for the traceback)"
    ]
    debug = runner.invoke(app, ["compile", "resnet18", "-o", out, "--debug"])
    assert "Traceback (most recent call last)" in debug.output
    assert ESC not in result.output


def test_a_zoo_error_is_exit_1_and_one_line(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def refuse(*_a: object, **_k: object) -> None:
        raise ZooError("`x.pt` holds a state dict")

    monkeypatch.setattr(compile_pipeline, "load_source", refuse)
    result = runner.invoke(app, ["compile", "x.pt", "-o", str(tmp_path / "x.mdla")])
    assert (result.exit_code, result.output) == (1, "error: `x.pt` holds a state dict\n")


@pytest.mark.parametrize(
    "env", [{"CI": "true"}, {"GITHUB_ACTIONS": "true"}, {"FORCE_COLOR": "1"}, {}]
)
def test_usage_errors_are_one_plain_line_under_ci(env: dict[str, str]) -> None:
    full = {**os.environ, "TERM": "xterm-256color", **env}
    for key in ("CI", "GITHUB_ACTIONS", "FORCE_COLOR", "PY_COLORS"):
        if key not in env:
            full.pop(key, None)
    done = subprocess.run(
        [WORKBENCH, "compile", "--calib"], capture_output=True, text=True, env=full, timeout=120
    )
    assert done.returncode == 2
    assert ESC not in done.stderr
    assert done.stderr.splitlines() == ["error: Option '--calib' requires an argument."]


BLOCK_TORCH = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("torch", "torchvision", "facenet_pytorch"):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return None
sys.meta_path.insert(0, Block())
from lipread.cli import main
sys.argv = ["lipread", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("case", ["fp32", "new weights"])
def test_lipread_without_torch_is_one_line(tmp_path: Path, case: str) -> None:
    script = tmp_path / "notorch.py"
    script.write_text(textwrap.dedent(BLOCK_TORCH))
    video = next(SAMPLE.glob("synthetic_*.mp4"))
    if case == "fp32":
        extra = ["--fp32"]
    else:  # weights whose hash has no compiled front-end: compiling it needs torch
        shipped = np.load(LIPREAD_WEIGHTS)
        new = tmp_path / "new.npz"
        scaled = {k: v * 1.01 if v.dtype.kind == "f" else v for k, v in shipped.items()}
        np.savez(new, **scaled)
        extra = ["--weights", str(new)]
    done = subprocess.run(
        [sys.executable, str(script), str(video), *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr  # the install to change, as in the workbench
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("lipread: error: this needs torch (for --fp32")
    assert "pip install 'mdla-lipread[torch]'" in line
