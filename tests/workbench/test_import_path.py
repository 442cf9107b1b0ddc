"""`--import fx|export|auto` (check, compile, validate, tune, bisect, export; auto by default):
a model torch.fx cannot trace imports through torch.export, one it can through torch.fx, and the
compile report and --json say which path imported it and why."""

from __future__ import annotations

import json
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


class ShyWriter(ExportShy):
    def forward(self, x):
        y = super().forward(x)
        y.clamp_(max=1.0)
        return y


def untraceable():
    return Untraceable().eval(), torch.zeros(1, 3, 16, 16)


def shy():
    return ExportShy().eval(), torch.zeros(1, 3, 16, 16)


def shy_writer():
    return ShyWriter().eval(), torch.zeros(1, 3, 16, 16)
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("import_path") / "import_models.py"
    path.write_text(textwrap.dedent(MODELS))
    return path


def test_fx_cannot_trace_it_and_export_imports_it(runner: CliRunner, models: Path) -> None:
    spec = f"{models}:untraceable"
    fx = runner.invoke(app, ["check", spec, "--import", "fx"])
    assert fx.exit_code != 0
    assert "torch.fx cannot trace" in fx.output + fx.stderr
    auto = runner.invoke(app, ["check", spec])  # auto is the default
    assert auto.exit_code == 0, auto.output + auto.stderr
    assert auto.stderr == ""  # no note: export imported it (--json says so)


FX_SUFFICED = (
    "torch.fx traced the whole module with no in-place aliasing, so torch.export was not needed"
)


def test_check_json_says_the_path(runner: CliRunner, models: Path) -> None:
    result = runner.invoke(app, ["check", f"{models}:shy", "--json"])
    assert result.exit_code == 0, result.output + result.stderr
    assert json.loads(result.stdout)["import"] == {"path": "fx", "note": FX_SUFFICED}
    result = runner.invoke(app, ["check", f"{models}:untraceable", "--json"])
    found = json.loads(result.stdout)["import"]
    assert found["path"] == "export"
    assert found["note"].startswith("torch.fx cannot trace `untraceable` at import_models.py:")
    assert found["note"].endswith("; imported via torch.export")
    result = runner.invoke(app, ["check", f"{models}:untraceable", "--json", "--import", "export"])
    assert json.loads(result.stdout)["import"] == {"path": "export", "note": None}


def test_auto_names_both_reasons_when_neither_path_will_do(runner: CliRunner, models: Path) -> None:
    """Export refuses it, and fx's graph would drop its unassigned `clamp_`."""
    result = runner.invoke(app, ["check", f"{models}:shy_writer"])
    assert result.exit_code == 3, result.output + result.stderr
    text = result.output + result.stderr
    assert "torch.export refused: RuntimeError: no export here at import_models.py:" in text
    assert "in-place op: `clamp_` writes in place into `relu`" in text


def test_compile_takes_the_path_too(runner: CliRunner, models: Path, tmp_path: Path) -> None:
    out = tmp_path / "u.mdla"
    args = ["compile", f"{models}:untraceable", "--import", "export", "--calib", "random"]
    result = runner.invoke(app, [*args, "--count", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    (row,) = [ln for ln in result.stdout.splitlines() if ln.split()[:1] == ["import"]]
    assert row.split() == ["import", "torch.export"]
    assert out.is_file()


def test_compile_reports_the_path_auto_took(
    runner: CliRunner, models: Path, tmp_path: Path
) -> None:
    out = tmp_path / "s.mdla"
    args = ["compile", f"{models}:shy", "--calib", "random", "--count", "2", "-o", str(out)]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output + result.stderr
    assert json.loads(result.stdout)["import"] == {"path": "fx", "note": FX_SUFFICED}
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output + text.stderr
    (row,) = [ln for ln in text.stdout.splitlines() if ln.split()[:1] == ["import"]]
    assert row.split()[1:4] == ["torch.fx", "(torch.fx", "traced"]


def test_the_mdla_records_the_path_and_run_reimports_by_it(
    runner: CliRunner, models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compile records the path that imported the model (`inspect` shows it); `run --model`
    captures its FP32 side by that path, or by `--import`."""
    import numpy as np

    import mdla_runtime
    from workbench import pipeline

    out, x = tmp_path / "s.mdla", tmp_path / "x.npy"
    spec = f"{models}:shy"  # export refuses it; auto imports it via torch.fx
    args = ["compile", spec, "--calib", "random", "--count", "2", "-o", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    assert mdla_runtime.load(out).provenance.import_path == "fx"
    shown = runner.invoke(app, ["inspect", str(out), "--json"])
    assert json.loads(shown.stdout)["compiled_from"]["import_path"] == "fx"
    np.save(x, np.zeros((1, 3, 16, 16), np.float32))
    paths: list[str] = []
    real = pipeline.load_source

    def spy(*args: object) -> object:
        paths.append(str(args[-1]))
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "load_source", spy)
    for flags, want, fp32 in (([], ["fx"], True), (["--import", "export"], ["export"], False)):
        paths.clear()
        saved = tmp_path / f"out{len(flags)}.npz"
        run = [str(out), str(x), "--model", spec, "--save-outputs", str(saved), *flags]
        result = runner.invoke(app, ["run", *run, "--out-dir", str(tmp_path)])
        assert result.exit_code == 0, result.output + result.stderr
        assert paths == want
        assert any(k.endswith("/fp32") for k in np.load(saved)) is fp32
