"""`workbench check` exits 0 only when `compile` would map the model, 3 with one row per op
(reason and what to do) when it would not; never a traceback, never one giant line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.workbench.conftest import UNMAPPABLE
from workbench.cli import app

BLOCKS = str(Path(__file__).with_name("unmappable_models.py"))


@pytest.mark.parametrize(
    ("spec", "where", "expected"),
    [
        (f"{BLOCKS}:convnext_block", "after legalization", ["LAYER_NORM", "GELU", "RSQRT"]),
        (f"{BLOCKS}:norm_and_dilated_pool", "do not import", ["MaxPool2d", "dilation (2, 1)"]),
        (UNMAPPABLE, "after legalization", ["GELU needs erf", "use ReLU"]),
    ],
)
def test_unmappable_models_end_with_rows_not_tracebacks(
    runner: CliRunner, spec: str, where: str, expected: list[str]
) -> None:
    for args in ([spec], [spec, "--legalized"]):
        result = runner.invoke(app, ["check", *args])
        assert result.exit_code == 3, result.output
        assert where in result.output
        for text in expected:
            assert text in result.output
        assert "what to do:" in result.output
        assert "Traceback" not in result.output + result.stderr
        assert max(len(line) for line in result.output.splitlines()) < 600
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stderr.startswith("error: ")


def test_grouped_convs_check_says_what_compile_does(runner: CliRunner, tmp_path: Path) -> None:
    """A grouped conv: check names the rule and its cost; --legalized maps; compile maps."""
    spec = str(Path(__file__).parents[1] / "models_rewrites.py") + ":resnextish"
    before = runner.invoke(app, ["check", spec])
    assert before.exit_code == 0, before.output
    assert "rule grouped_conv_to_dense (block-diagonal weights: exact, 4x" in before.output
    assert "grouped_conv_to_dense x1" in before.output
    assert "conv MACs: 0.6 M as imported -> 1.1 M on the device (1.70x" in before.output
    out = tmp_path / "r.mdla"
    args = [spec, "--calib", "random", "--count", "2", "-o", str(out)]
    done = runner.invoke(app, ["compile", *args])
    assert done.exit_code == 0, done.output
    manifest = runner.invoke(app, ["check", str(out)])
    assert manifest.exit_code == 0, manifest.output


def test_check_and_compile_agree_on_an_import_refusal(runner: CliRunner, tmp_path: Path) -> None:
    """A construct the importer cannot represent is unsupported (3) for both commands, and
    the row names the module (qualified name and class) and the fix."""
    spec = f"{BLOCKS}:norm_and_dilated_pool"
    check = runner.invoke(app, ["check", spec])
    out = str(tmp_path / "a.mdla")
    compiled = runner.invoke(app, ["compile", spec, "--calib", "random", "-o", out])
    assert (check.exit_code, compiled.exit_code) == (3, 3), compiled.output
    assert "`pool` in `pool` (torch.nn.modules.pooling.MaxPool2d)" in check.output
    assert "fix: use the same dilation for H and W" in check.output
    assert "MaxPool2d" in compiled.output


def test_check_lists_both_stages_problems_at_once(runner: CliRunner) -> None:
    """The block's dilated max pool does not import; of the rest, the LayerNorm does not map:
    one check names both (the refused result taken as an input)."""
    spec = f"{BLOCKS}:norm_and_dilated_pool"
    result = runner.invoke(app, ["check", spec, "--json"])
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout.strip().splitlines()[-1])
    assert doc["stage"] == "import"
    assert any("MaxPool2d" in p for p in doc["problems"])
    assert any("(LAYER_NORM)" in p for p in doc["legalize_problems"])
    shown = runner.invoke(app, ["check", spec])
    assert "of what imports, " in shown.output
    assert "and 1 op(s) of the rest do not map" in shown.stderr
