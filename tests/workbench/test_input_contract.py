"""The input contract on compile/run/validate: stored in the manifest (both readers take it),
reproduced by `run` from the file alone, images/directories/.npy/.npz inputs, calibration read
lazily from a directory with --count, and each malformed option a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import mdla_runtime
from mdla_ir import Preprocess
from mdla_zoo.contract import prepare_contract
from tests.workbench.conftest import TINY, TINY_IMAGES
from workbench import images as imgs
from workbench.cli import app

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("contract")
    photos = root / "photos"
    photos.mkdir()
    for i in range(2):
        pixels = RNG.integers(0, 256, (40 + 10 * i, 52, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(photos / f"p{i}.png")
    (photos / "zz_broken.png").write_bytes(b"not a png")  # sorted last: read only by --count 3
    arrays = root / "arrays"
    arrays.mkdir()
    for i in range(2):
        np.save(arrays / f"a{i}.npy", RNG.uniform(-1, 1, (3, 32, 32)).astype(np.float32))
    np.savez(root / "one.npz", x=RNG.uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32))
    np.save(root / "wrong.npy", np.zeros((1, 3, 16, 16), np.float32))
    (root / "labels.txt").write_text("\n".join(f"class {i}" for i in range(10)) + "\n")
    return root


@pytest.fixture(scope="module")
def contract_mdla(work: Path) -> Path:
    """TINY (a factory with its own example input: no preprocessing of its own) given the
    whole contract on the command line, calibrated on two photos of the directory."""
    out = work / "contract.mdla"
    result = CliRunner().invoke(
        app,
        [
            "compile", TINY, "--preset", "minus1to1", "--channels", "bgr", "--resize", "40",
            "--labels", str(work / "labels.txt"), "--calib", str(work / "photos"),
            "--count", "2", "-o", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def test_the_manifest_stores_the_contract(contract_mdla: Path) -> None:
    manifest = mdla_runtime.load(contract_mdla)
    prov = manifest.provenance
    assert prov.preprocess == Preprocess("minus1to1", (32, 32), (0.5,) * 3, (0.5,) * 3, "bgr", 40)
    assert prov.labels == tuple(f"class {i}" for i in range(10))
    assert prov.calibration_samples == 2  # --count 2: the broken third file never opened


def test_run_prepares_an_image_from_the_manifest_alone(
    runner: CliRunner, contract_mdla: Path, work: Path
) -> None:
    photo = work / "photos" / "p1.png"
    result = runner.invoke(app, ["run", str(contract_mdla), str(photo), "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.output)["runs"]
    x = prepare_contract(
        imgs.read_image(photo), (32, 32), (0.5,) * 3, (0.5,) * 3, channels="bgr", resize=40
    )
    manifest = mdla_runtime.load(contract_mdla)
    logits = mdla_runtime.open_target("emu").run(manifest, [x]).outputs[0]
    want = imgs.top_k(logits, manifest.provenance.labels, 5)
    assert [(t["index"], t["label"]) for t in entry["top5"]] == [(i, n) for i, n, _ in want]
    assert entry["top5"][0]["label"].startswith("class ")


def test_run_takes_a_directory_and_arrays(
    runner: CliRunner, contract_mdla: Path, work: Path
) -> None:
    both = runner.invoke(app, ["run", str(contract_mdla), str(work / "arrays"), "--json"])
    assert both.exit_code == 0, both.output
    runs = json.loads(both.output)["runs"]
    assert [r["image"] for r in runs] == ["a0.npy", "a1.npy"]
    x = np.load(work / "arrays" / "a0.npy")[None]
    logits = mdla_runtime.open_target("emu").run(mdla_runtime.load(contract_mdla), [x]).outputs[0]
    assert runs[0]["top5"][0]["index"] == int(np.argmax(logits))
    npz = runner.invoke(app, ["run", str(contract_mdla), str(work / "one.npz")])
    assert npz.exit_code == 0, npz.output


def test_a_mis_shaped_array_names_both_shapes(
    runner: CliRunner, contract_mdla: Path, work: Path
) -> None:
    result = runner.invoke(app, ["run", str(contract_mdla), str(work / "wrong.npy")])
    assert result.exit_code == 1
    assert "has shape [1, 3, 16, 16]; the model's input 0 is [1, 3, 32, 32]" in result.output


def test_run_options_replace_the_stored_contract(
    runner: CliRunner, contract_mdla: Path, work: Path
) -> None:
    photo = work / "photos" / "p0.png"
    result = runner.invoke(
        app, ["run", str(contract_mdla), str(photo), "--preset", "zero1", "--crop", "none",
              "--channels", "rgb", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    x = prepare_contract(imgs.read_image(photo), (32, 32), (0.0,) * 3, (1.0,) * 3, resize=0)
    logits = mdla_runtime.open_target("emu").run(mdla_runtime.load(contract_mdla), [x]).outputs[0]
    assert json.loads(result.output)["runs"][0]["top5"][0]["index"] == int(np.argmax(logits))


def test_calibration_reads_the_directory_lazily(runner: CliRunner, work: Path) -> None:
    out = work / "three.mdla"
    args = ["compile", TINY, "--preset", "imagenet", "--calib", str(work / "photos")]
    result = runner.invoke(app, [*args, "--count", "3", "-o", str(out)])
    assert result.exit_code == 1
    assert "cannot decode image" in result.output
    assert "zz_broken.png" in result.output
    assert not out.exists()


def test_a_model_without_a_contract_calibrates_on_arrays_and_refuses_images(
    runner: CliRunner, work: Path
) -> None:
    out = work / "arrays.mdla"
    args = ["compile", TINY, "--calib", str(work / "arrays"), "--count", "2", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert mdla_runtime.load(out).provenance.preprocess is None
    photo = str(work / "photos" / "p0.png")
    refused = runner.invoke(app, ["run", str(out), photo])
    assert refused.exit_code == 1
    assert "takes no images (it records no image preprocessing), so not" in refused.output
    assert "--preset" in refused.output
    calib = runner.invoke(app, ["compile", TINY, "--count", "2", "-o", str(work / "s.mdla")])
    assert calib.exit_code == 1
    assert "give --preset" in calib.output


def test_input_shape_resizes_the_model_and_its_record(runner: CliRunner, work: Path) -> None:
    out = work / "wide.mdla"
    args = ["compile", TINY_IMAGES, "--input-shape", "1,3,24,40", "--count", "2", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    manifest = mdla_runtime.load(out)
    assert tuple(manifest.inputs[0].model_shape) == (1, 3, 24, 40)
    assert manifest.provenance.preprocess is not None
    assert manifest.provenance.preprocess.size == (24, 40)
    assert manifest.provenance.preprocess.mode == "imagenet"


def test_validate_takes_the_contract_and_array_inputs(runner: CliRunner, work: Path) -> None:
    args = ["validate", TINY, str(work / "arrays"), "--preset", "imagenet", "--count", "2"]
    args += ["--calib", str(work / "photos")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "a0.npy" in result.output
    assert "a1.npy" in result.output
    assert "INT8 reference: top-1 agreement" in result.output


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--preset", "caffe"], "--preset `caffe`: expected one of"),
        (["--mean", "123.7,116.3,103.5", "--std", "58,57,57"], "looks like 0..255 pixels"),
        (["--mean", "0.5"], "--mean and --std go together"),
        (["--preset", "imagenet", "--std", "0.5,0,0.5"], "every value must be > 0"),
        (["--channels", "yuv"], "--channels `yuv`: expected rgb or bgr"),
        (["--crop", "none", "--resize", "40"], "--crop none has none"),
        (["--crop", "middle"], "--crop `middle`"),
        (["--input-shape", "1,3,x"], "--input-shape `1,3,x`"),
        (["--input-shape", "1,8", "--preset", "zero1"], "for a model with one 1,3,H,W input"),
        (["--channels", "bgr"], "records no normalization: give --preset"),
    ],
)
def test_each_malformed_option_is_a_usage_error(
    runner: CliRunner, work: Path, options: list[str], words: str
) -> None:
    out = work / "never.mdla"
    result = runner.invoke(app, ["compile", TINY, *options, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert words in result.output
    assert not out.exists()


def test_an_input_shape_the_model_cannot_take_is_one_line(runner: CliRunner, work: Path) -> None:
    out = work / "never.mdla"
    result = runner.invoke(app, ["compile", TINY, "--input-shape", "1,8,16,16", "-o", str(out)])
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: `")
    assert "does not run on a 1,8,16,16 input (--input-shape): RuntimeError:" in line


def test_inspect_shows_the_contract(runner: CliRunner, contract_mdla: Path) -> None:
    table = runner.invoke(app, ["inspect", str(contract_mdla)])
    assert table.exit_code == 0, table.output
    assert "minus1to1 [32, 32], mean" in table.output
    assert "bgr, resize 40" in table.output
    info = json.loads(runner.invoke(app, ["inspect", str(contract_mdla), "--json"]).output)
    assert (info["preprocess"]["channels"], info["preprocess"]["resize"]) == ("bgr", 40)


def test_factory_arguments_from_the_command_line(runner: CliRunner, work: Path) -> None:
    model = work / "sized.py"
    model.write_text(
        "import torch\nfrom torch import nn\n\n"
        "def build(classes, side=8):\n"
        "    net = nn.Sequential(nn.Conv2d(3, classes, 3), nn.ReLU())\n"
        "    return net, torch.zeros(1, 3, side, side)\n"
    )
    out = work / "sized.mdla"
    args = ["compile", f"{model}:build", "--arg", "classes=6", "--arg", "side=12"]
    result = runner.invoke(app, [*args, "--calib", "random", "--count", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    manifest = mdla_runtime.load(out)
    assert tuple(manifest.inputs[0].model_shape) == (1, 3, 12, 12)
    assert tuple(manifest.outputs[0].model_shape) == (1, 6, 10, 10)
    bad = runner.invoke(app, ["compile", f"{model}:build", "--arg", "classes", "-o", str(out)])
    assert bad.exit_code == 2
    assert "--arg `classes`: expected key=value" in bad.output
    missing = runner.invoke(app, ["compile", f"{model}:build", "-o", str(work / "m.mdla")])
    assert missing.exit_code == 1
    assert "build() does not take these arguments (missing a required argument: 'classes')" in (
        missing.output
    )
