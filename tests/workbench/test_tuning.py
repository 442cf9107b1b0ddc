"""Calibration tuning on held-out inputs (`workbench.tuning`, `workbench tune`): the split is
disjoint and the quantizer never sees the held-out part, the scores are mdla_quant.compare's on
that part, deltas are new minus previous, the interval is Wilson's, and save writes the three
files with what was shown."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import mdla_compile
import mdla_ir
import mdla_quant
import mdla_runtime
from tests.workbench.conftest import TINY, TINY_IMAGES
from workbench import held_out, pipeline, tuning
from workbench.cli import app
from workbench.errors import USAGE, WorkbenchError
from workbench.tuning_plot import NEW, PREVIOUS, sqnr_png


@pytest.fixture(scope="module")
def tiny() -> tuple[pipeline.Source, mdla_ir.Graph]:
    source = pipeline.load_source(TINY)
    return source, pipeline.legalize_graph(source.graph)


@pytest.fixture(scope="module")
def pair(tiny: tuple[pipeline.Source, mdla_ir.Graph]) -> tuning.Comparison:
    source, device = tiny
    split = tuning.split_calibration("random", source, 2, 3)
    old = tuning.trial(source, device, split, mdla_quant.QuantConfig())
    new = tuning.trial(source, device, split, mdla_quant.QuantConfig(method="minmax"))
    return tuning.compare(new, old)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (8, 10, 0.4902, 0.9433),  # the textbook example (Newcombe 1998, Agresti & Coull)
        (0, 10, 0.0, 0.2775),  # z²/(n+z²)
        (10, 10, 0.7225, 1.0),
        (2, 2, 0.3424, 1.0),
        (0, 0, 0.0, 1.0),
    ],
)
def test_wilson(k: int, n: int, low: float, high: float) -> None:
    assert held_out.wilson(k, n) == pytest.approx((low, high), abs=1e-4)


def test_random_split_is_disjoint(tiny: tuple[pipeline.Source, mdla_ir.Graph]) -> None:
    split = tuning.split_calibration("random", tiny[0], 2, 3)
    assert len(split.calibration) == 2
    assert [n for n, _ in split.held_out] == ["random 2", "random 3", "random 4"]
    for _, held in split.held_out:
        assert not any(np.array_equal(held[0], c[0]) for c in split.calibration)


def test_directory_split_follows_file_names(
    tiny: tuple[pipeline.Source, mdla_ir.Graph], tmp_path: Path
) -> None:
    rng = np.random.default_rng(1)
    for i in range(4):
        np.save(tmp_path / f"x{i}.npy", rng.uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32))
    split = tuning.split_calibration(str(tmp_path), tiny[0], 3, 1)
    assert [n for n, _ in split.held_out] == ["x3.npy"]
    np.testing.assert_array_equal(split.held_out[0][1][0], np.load(tmp_path / "x3.npy"))
    with pytest.raises(WorkbenchError, match="has 4 inputs") as err:
        tuning.split_calibration(str(tmp_path), tiny[0], 3, 2)
    assert err.value.exit_code == USAGE


def test_split_needs_a_held_out_input(tiny: tuple[pipeline.Source, mdla_ir.Graph]) -> None:
    with pytest.raises(WorkbenchError, match="--held-out must be at least 1") as err:
        tuning.split_calibration("random", tiny[0], 2, 0)
    assert err.value.exit_code == USAGE


def test_samples_split_names_the_photos() -> None:
    source = pipeline.load_source(TINY_IMAGES)
    split = tuning.split_calibration("samples", source, 4, 2)
    assert [n for n, _ in split.held_out] == ["camera", "astronaut"]
    with pytest.raises(WorkbenchError, match="has 6 photos"):
        tuning.split_calibration("samples", source, 5, 2)


def test_the_quantizer_never_sees_held_out(tiny: tuple[pipeline.Source, mdla_ir.Graph]) -> None:
    """Held-out inputs 100x larger than the calibration ones leave every scale unchanged."""
    source, device = tiny
    split = tuning.split_calibration("random", source, 2, 2)
    loud = tuning.Split(
        "random", split.calibration, tuple((n, [x[0] * 100]) for n, x in split.held_out)
    )
    config = mdla_quant.QuantConfig(method="minmax")
    quiet_q = tuning.trial(source, device, split, config).compiled.qgraph
    loud_q = tuning.trial(source, device, loud, config).compiled.qgraph
    for name, t in quiet_q.tensors.items():
        if t.quant is not None:
            assert t.quant == loud_q.tensors[name].quant, name


def test_scores_are_those_of_the_held_out_inputs(
    tiny: tuple[pipeline.Source, mdla_ir.Graph],
) -> None:
    source, device = tiny
    split = tuning.split_calibration("random", source, 2, 3)
    t = tuning.trial(source, device, split, mdla_quant.QuantConfig())
    held = [xs for _, xs in split.held_out]
    report = mdla_quant.compare(device, t.compiled.qgraph, held)
    assert [(x.tensor, x.sqnr_db, x.cosine, x.max_abs) for x in t.layers] == [
        (s.name, s.sqnr_db, s.cosine, s.max_abs) for s in report.tensors
    ]
    same = sum(
        int(
            np.argmax(mdla_ir.run_float(source.graph, xs)[0])
            == np.argmax(mdla_quant.run_int8(t.compiled.qgraph, xs)[0])
        )
        for xs in held
    )
    assert t.agreement == held_out.Agreement(same, 3)
    assert t.calibration_count == 2


def test_deltas_are_new_minus_previous(pair: tuning.Comparison) -> None:
    assert pair.previous is not None
    old = {x.tensor: x for x in pair.previous.layers}
    rows = pair.deltas()
    assert len(rows) == len(pair.new.layers)
    for row, x in zip(rows, pair.new.layers, strict=True):
        p = old[x.tensor]
        assert row["delta_cosine"] == x.cosine - p.cosine
        assert row["delta_max_abs_error"] == x.max_abs - p.max_abs
        if math.isfinite(x.sqnr_db) or x.sqnr_db != p.sqnr_db:
            assert row["delta_sqnr_db"] == x.sqnr_db - p.sqnr_db
        else:
            assert row["delta_sqnr_db"] == 0.0
    assert any(r["delta_sqnr_db"] != 0 for r in rows)  # minmax differs from percentile here
    assert tuning.compare(pair.new, None).deltas()[0]["delta_sqnr_db"] is None


def test_label_shows_the_percentile_only_where_it_applies() -> None:
    assert tuning.label(mdla_quant.QuantConfig()) == "percentile 99.99 double"
    config = mdla_quant.QuantConfig(method="mse", rounding="single", bias_correction=True)
    assert tuning.label(config) == "mse single +bias"
    other = next(r for r in mdla_quant.WEIGHT_ROUNDINGS if r != tuning.DEFAULT_ROUNDING)
    config = mdla_quant.QuantConfig(weight_scale="mse", weight_rounding=other)
    assert tuning.label(config).endswith(f" +{other} rounding +mse weight scale")


def test_parse_setting() -> None:
    base = mdla_quant.QuantConfig(target="mdla3.5")
    got = tuning.parse_setting("method=mse, bias-correction=yes,adaround=5", base)
    assert (got.method, got.bias_correction, got.adaround) == ("mse", True, 5)
    got = tuning.parse_setting("weight-rounding=balanced,weight_scale=mse", base)
    assert (got.weight_rounding, got.weight_scale) == ("balanced", "mse")
    for bad, message in (
        ("bins=4", "expected key=value"),
        ("percentile=abc", "not a percentile value"),
        ("bias_correction=maybe", "not a bias_correction value"),
        ("method=median", "unknown calibration method"),
        ("percentile=40", "outside"),
        ("weight_rounding=floor", "unknown weight_rounding `floor`"),
    ):
        with pytest.raises(WorkbenchError, match=message) as err:
            tuning.parse_setting(bad, base)
        assert err.value.exit_code == USAGE


def test_save_writes_manifest_json_and_plot(pair: tuning.Comparison, tmp_path: Path) -> None:
    paths = tuning.save(pair, tmp_path / "n.mdla")
    assert paths == {
        "manifest": tmp_path / "n.mdla",
        "json": tmp_path / "n.tuning.json",
        "plot": tmp_path / "n.sqnr.png",
    }
    quant = mdla_runtime.load(paths["manifest"]).provenance.quant
    assert quant is not None
    assert quant.method == "minmax"
    doc = json.loads(paths["json"].read_text(), parse_constant=pytest.fail)
    assert doc["held_out"] == {"count": 3, "inputs": ["random 2", "random 3", "random 4"]}
    assert doc["new"]["setting"] == "minmax double"
    assert doc["previous"]["setting"] == "percentile 99.99 double"
    assert [r["tensor"] for r in doc["layers"]] == [x.tensor for x in pair.new.layers]
    assert doc["layers"][0]["sqnr_db"] == pytest.approx(pair.new.layers[0].sqnr_db)
    # the setting the manifest records is the one `--previous OUT.mdla` re-runs
    again = tuning.setting_of_manifest(paths["manifest"], mdla_quant.QuantConfig())
    assert again == pair.new.config


def test_plot_draws_both_settings(pair: tuning.Comparison) -> None:
    img = Image.open(io.BytesIO(sqnr_png(pair))).convert("RGB")
    assert img.size == (800, 400)
    colours = {c for _, c in img.getcolors(maxcolors=1 << 16) or []}
    assert NEW in colours
    assert PREVIOUS in colours
    only_new = Image.open(io.BytesIO(sqnr_png(tuning.compare(pair.new, None)))).convert("RGB")
    assert PREVIOUS not in {c for _, c in only_new.getcolors(maxcolors=1 << 16) or []}


def test_tune_command_json(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "t.mdla"
    args = [TINY, "--calib", "random", "--count", "2", "--held-out", "3", "--method", "mse"]
    result = runner.invoke(app, ["tune", *args, "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    doc: dict[str, Any] = json.loads(line, parse_constant=pytest.fail)
    assert doc["calibration"] == {"count": 2}
    assert doc["held_out"]["count"] == 3
    assert doc["new"]["config"]["method"] == "mse"
    assert doc["previous"]["setting"] == "percentile 99.99 double"
    a = doc["new"]["top1_agreement"]
    assert a["ci95"] == pytest.approx(list(held_out.wilson(a["same"], 3)))
    assert "scored on 3 held-out input(s)" in result.stderr
    assert doc["saved"]["json"] == str(tmp_path / "t.tuning.json")
    saved = json.loads((tmp_path / "t.tuning.json").read_text())
    assert saved["layers"] == doc["layers"]
    again = runner.invoke(app, ["tune", *args, "--previous", str(out), "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["previous"]["setting"] == "mse double"


def test_tune_command_usage_errors(runner: CliRunner) -> None:
    result = runner.invoke(app, ["tune", TINY, "--calib", "random", "--previous", "bins=3"])
    assert result.exit_code == USAGE
    assert "expected key=value" in result.stderr


@pytest.mark.parametrize("calib", ["random", "samples"])
def test_the_split_calibrates_on_what_compile_calibrates_on(calib: str) -> None:
    """`tune` compiles its new setting with `mdla_compile.compile` and scores it on the split's
    held-out inputs: the compile's calibration inputs are the split's, and none held out."""
    spec = TINY if calib == "random" else TINY_IMAGES
    compiled = mdla_compile.compile(mdla_compile.CompileOptions(spec, calib=calib, count=2))
    split = tuning.split_calibration(calib, compiled.source, 2, 2)
    assert len(compiled.calibration) == len(split.calibration) == 2
    for a, b in zip(compiled.calibration, split.calibration, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
    for _, held in split.held_out:
        assert not any(np.array_equal(held[0], c[0]) for c in compiled.calibration)
