"""`workbench tune --reconstruction block` (issue 20's block reconstruction): the setting reaches
the quantizer (its blocks are refined, the manifest records it), the label and --json say it,
`--previous` parses and re-runs it, and block without AdaRound iterations fails as compile does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import mdla_ir
import mdla_quant
import mdla_runtime
from mdla_quant.block_reconstruction import find_blocks
from tests.workbench.conftest import TINY
from workbench import pipeline, tuning
from workbench.cli import app
from workbench.errors import BAD_INPUT, USAGE, WorkbenchError

BLOCK = f"{Path(__file__).with_name('block_model.py')}:mbconv"
ITERS = 20  # AdaRound iterations per layer: under a second per trial on these models


def recorder(names: list[str]) -> pipeline.LayerProgress:
    return lambda _i, _n, name: names.append(name)


@pytest.fixture(scope="module")
def mbconv() -> tuple[pipeline.Source, mdla_ir.Graph]:
    source = pipeline.load_source(BLOCK)
    return source, pipeline.legalize_graph(source.graph)


def test_label_says_block_reconstruction_and_not_the_default() -> None:
    block = mdla_quant.QuantConfig(adaround=3, reconstruction="block")
    assert tuning.label(block) == "percentile 99.99 double +adaround 3 +block reconstruction"
    layer = mdla_quant.QuantConfig(adaround=3)
    assert tuning.label(layer) == "percentile 99.99 double +adaround 3"


def test_parse_setting_reads_reconstruction() -> None:
    base = mdla_quant.QuantConfig(target="mdla3.5")
    got = tuning.parse_setting("adaround=3, reconstruction=block", base)
    assert (got.adaround, got.reconstruction) == (3, "block")
    assert tuning.parse_setting("adaround=3", base).reconstruction == "layer"
    for bad, message in (
        ("reconstruction=block", r"adaround > 0"),  # QuantConfig's own check, as a usage error
        ("adaround=3,reconstruction=net", "unknown reconstruction `net`"),
    ):
        with pytest.raises(WorkbenchError, match=message) as err:
            tuning.parse_setting(bad, base)
        assert err.value.exit_code == USAGE


def test_trial_refines_the_block_only_with_block_reconstruction(
    mbconv: tuple[pipeline.Source, mdla_ir.Graph],
) -> None:
    """AdaRound reports each layer it fits and, with block reconstruction, each block it
    refines after the block's last layer: the block's name appears in the block trial only."""
    source, device = mbconv
    (block,) = find_blocks(device)
    split = tuning.split_calibration("random", source, 2, 2)
    seen: dict[str, list[str]] = {"layer": [], "block": []}
    for how, names in seen.items():
        config = mdla_quant.QuantConfig(adaround=ITERS, reconstruction=how)
        t = tuning.trial(source, device, split, config, layer_progress=recorder(names))
        assert t.config.reconstruction == how
        assert t.compiled.qgraph.provenance.quant is not None
        assert t.compiled.qgraph.provenance.quant.reconstruction == how
    assert block.name not in seen["layer"]
    assert seen["block"] == [*seen["layer"][:4], block.name, *seen["layer"][4:]]
    assert seen["layer"][3] == block.ops[-1].name  # refined right after the project conv


def test_tune_block_against_layer_json_and_manifest(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "b.mdla"
    args = [BLOCK, "--calib", "random", "--count", "2", "--held-out", "2", "--json"]
    block = [*args, "--adaround", str(ITERS), "--reconstruction", "block"]
    result = runner.invoke(app, ["tune", *block, "--previous", f"adaround={ITERS}", "-o", str(out)])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout, parse_constant=pytest.fail)
    new, previous = doc["new"], doc["previous"]
    assert new["setting"] == f"percentile 99.99 double +adaround {ITERS} +block reconstruction"
    assert previous["setting"] == f"percentile 99.99 double +adaround {ITERS}"
    assert (new["config"]["reconstruction"], previous["config"]["reconstruction"]) == (
        "block",
        "layer",
    )
    assert new["config"]["adaround"] == previous["config"]["adaround"] == ITERS
    assert f"new ({new['setting']}): top-1 agreement" in result.stderr
    quant = mdla_runtime.load(out).provenance.quant
    assert quant is not None
    assert (quant.adaround, quant.reconstruction) == (ITERS, "block")
    saved = json.loads((tmp_path / "b.tuning.json").read_text())
    assert saved["new"]["config"]["reconstruction"] == "block"
    # the manifest's setting is what `--previous OUT.mdla` re-runs: block again, not the default
    again = runner.invoke(app, ["tune", *args, "--previous", str(out)])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["previous"]["config"]["reconstruction"] == "block"
    assert json.loads(again.stdout)["previous"]["setting"] == new["setting"]


def test_block_without_adaround_fails_as_compile_does(runner: CliRunner, tmp_path: Path) -> None:
    args = [TINY, "--calib", "random", "--count", "2", "--reconstruction", "block"]
    tune = runner.invoke(app, ["tune", *args, "--held-out", "1"])
    compile_ = runner.invoke(app, ["compile", *args, "-o", str(tmp_path / "t.mdla")])
    assert tune.exit_code == compile_.exit_code == BAD_INPUT
    assert tune.stderr.splitlines()[-1] == compile_.stderr.splitlines()[-1]
    assert "adaround > 0" in tune.stderr.splitlines()[-1]
    assert not (tmp_path / "t.mdla").exists()


def test_reconstruction_usage_errors(runner: CliRunner) -> None:
    args = [TINY, "--calib", "random", "--count", "2", "--held-out", "1"]
    unknown = runner.invoke(app, ["tune", *args, "--adaround", "3", "--reconstruction", "net"])
    assert unknown.exit_code == USAGE
    assert "--reconstruction" in unknown.stderr
    previous = runner.invoke(app, ["tune", *args, "--previous", "reconstruction=block"])
    assert previous.exit_code == USAGE
    assert "setting `reconstruction=block`" in previous.stderr
    assert "adaround > 0" in previous.stderr
