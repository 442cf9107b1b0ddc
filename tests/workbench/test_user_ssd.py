"""A user's own torchvision SSD from a `file.py:factory` spec (`SSDHeads` around it): compile
records its decoder in `model.postprocess`, and `run` decodes the manifest's outputs into boxes
with it, although the spec is no zoo name (`mdla_zoo.detection.DECODERS` does not know it)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_runtime
from mdla_zoo.detection import DECODERS, SSDDecoder, detect
from tests.workbench.ssd_model import detector
from workbench.boxes import Boxes
from workbench.cli import app
from workbench.commands.run import manifest_inputs

SPEC = f"{Path(__file__).with_name('ssd_model.py')}:detector"
SIZE = 48  # given with --arg, so the factory's default (64) would be another model


@pytest.fixture(scope="module")
def ssd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ssd") / "ssd.mdla"
    result = CliRunner().invoke(
        app,
        [
            *("compile", SPEC, "--arg", f"size={SIZE}", "--input-shape", f"1,3,{SIZE},{SIZE}"),
            *("--preset", "minus1to1", "--crop", "none", "--count", "2", "-o", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def test_compile_records_the_models_decoder(ssd: Path) -> None:
    manifest = mdla_runtime.load(ssd)
    assert SPEC not in DECODERS
    want = detector(size=SIZE).decoder
    assert want.image_size == (SIZE, SIZE)
    assert manifest.provenance.postprocess == want.record()
    assert SSDDecoder.of(want.record()) == want


def test_run_prints_the_boxes_decoded_with_the_manifests_record(ssd: Path) -> None:
    manifest = mdla_runtime.load(ssd)
    spec = manifest.provenance.spec  # the user names the model (copied from `inspect`)
    result = CliRunner().invoke(app, ["run", str(ssd), "chelsea", "--json", "--model", spec])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    ((_, x),) = manifest_inputs(manifest, ["chelsea"])
    outs = mdla_runtime.open_target("emu").run(manifest, [x]).outputs
    dec = detector(size=SIZE).decoder
    int8 = detect(dec, outs).scaled(dec.image_size, (300, 451))  # chelsea: 300 x 451 (h, w)
    assert len(int8) >= 5
    got = entry["boxes"]["int8"]
    assert [r["class"] for r in got] == [int(c) for c in int8.labels[:5]]
    np.testing.assert_allclose([r["score"] for r in got], int8.scores[:5], atol=1e-4)
    np.testing.assert_allclose([r["box"] for r in got], int8.boxes[:5], atol=0.06)
    # the manifest records the spec with its --arg: given as --model, it imports the same model
    assert spec == f"{SPEC}(size={SIZE})"
    assert entry["boxes"]["fp32"] is not None
    assert "no_fp32" not in entry["boxes"]
    assert Path(entry["boxes"]["png"]).is_file()
    Path(entry["boxes"]["png"]).unlink()
    text = CliRunner().invoke(app, ["run", str(ssd), "chelsea"])
    assert text.exit_code == 0, text.output
    assert "chelsea: best 5 boxes, x0 y0 x1 y1 in pixels" in text.output
    assert "boxes of chelsea:" in text.output
    Path.cwd().joinpath("mdla-out", "chelsea.detector.boxes.png").unlink()


def test_without_the_record_the_manifest_is_no_detector(ssd: Path) -> None:
    manifest = mdla_runtime.load(ssd)
    model = {k: v for k, v in manifest.model.items() if k != "postprocess"}
    assert Boxes(dataclasses.replace(manifest, model=model)).decoder is None
    assert Boxes(manifest).decoder == detector(size=SIZE).decoder


def test_run_on_an_array_gives_boxes_in_the_inputs_pixels(ssd: Path, tmp_path: Path) -> None:
    """A .npy has no photo to draw on: the boxes are in the model input's pixels, no PNG."""
    manifest = mdla_runtime.load(ssd)
    ((_, x),) = manifest_inputs(manifest, ["chelsea"])
    np.save(tmp_path / "x.npy", x)
    args = ["run", str(ssd), str(tmp_path / "x.npy"), "--out-dir", str(tmp_path / "out")]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    outs = mdla_runtime.open_target("emu").run(manifest, [x]).outputs
    int8 = detect(detector(size=SIZE).decoder, outs)
    got = entry["boxes"]["int8"]
    assert [r["class"] for r in got] == [int(c) for c in int8.labels[:5]]
    np.testing.assert_allclose([r["box"] for r in got], int8.boxes[:5], atol=0.06)
    assert entry["boxes"]["fp32"] is not None  # the float graph stored beside the .mdla
    assert entry["boxes"]["png"] is None
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "boxes of x.npy: no PNG (an array input has no photo to draw on)" in text.output
