"""`run --save-outputs` and `--out-dir`: every output as a file, every file in one folder, and
an input folder never changed nor read back (`mdla_compile.written`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import mdla_ir
import mdla_runtime
from mdla_compile.inputs import input_files
from mdla_compile.written import is_written
from tests.workbench.conftest import TINY_IMAGES
from workbench import images as imgs
from workbench import pipeline
from workbench.cli import app
from workbench.commands.run import manifest_inputs

Array = np.ndarray[Any, Any]
SEG = f"{Path(__file__).with_name('seg_model.py')}:segmenter"


@pytest.fixture(scope="module")
def seg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("seg") / "seg.mdla"
    result = CliRunner().invoke(app, ["compile", SEG, "--count", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def photos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """photos/ with two photos; the working directory is tmp_path."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("chelsea", "coffee"):
        Image.fromarray(imgs.read_image(name)).save(folder / f"{name}.png")
    return folder


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def test_saved_outputs_are_the_runs_values(seg: Path, photos: Path) -> None:
    args = ["run", str(seg), str(photos), "--save-outputs", "o.npz", "--model", SEG, "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["saved_outputs"] == "o.npz"
    manifest = mdla_runtime.load(seg)
    graph = pipeline.load_source(SEG).graph
    with np.load("o.npz", allow_pickle=False) as z:
        assert z["inputs"].tolist() == ["chelsea.png", "coffee.png"]
        for k, (_, x) in enumerate(manifest_inputs(manifest, [str(photos)])):
            run = mdla_runtime.open_target("emu").run(manifest, [x])
            floats = mdla_ir.run_float(graph, [x])
            for i, spec in enumerate(manifest.outputs):
                key = f"{k}/{spec.name}"
                np.testing.assert_array_equal(z[key], run.outputs[i])
                q = z[f"{key}/int8"]
                assert q.dtype == np.int8
                assert q.shape == spec.model_shape
                assert float(z[f"{key}/scale"]) == np.float32(spec.scale)
                assert int(z[f"{key}/zero_point"]) == spec.zero_point
                deq = z[f"{key}/scale"] * (q.astype(np.float32) - z[f"{key}/zero_point"])
                np.testing.assert_allclose(deq, run.outputs[i], rtol=1e-6, atol=1e-7)
                np.testing.assert_allclose(z[f"{key}/fp32"], floats[i], rtol=1e-5, atol=1e-6)


def test_without_a_float_graph_the_file_has_no_fp32(seg: Path, photos: Path) -> None:
    """A .mdla without its stored float graph (an older compile's) and no --model."""
    old = photos.parent / "old.mdla"
    old.write_bytes(seg.read_bytes())
    args = ["run", str(old), str(photos / "chelsea.png"), "--save-outputs", "o.npz"]
    assert CliRunner().invoke(app, args).exit_code == 0
    with np.load("o.npz") as z:
        assert "0/out/int8" in z.files
        assert not [k for k in z.files if k.endswith("/fp32")]


def test_the_stored_float_graph_fills_fp32_without_model(seg: Path, photos: Path) -> None:
    args = ["run", str(seg), str(photos / "chelsea.png"), "--save-outputs", "o.npz"]
    assert CliRunner().invoke(app, args).exit_code == 0
    manifest = mdla_runtime.load(seg)
    ((_, x),) = manifest_inputs(manifest, [str(photos / "chelsea.png")])
    want = mdla_ir.run_float(pipeline.load_source(SEG).graph, [x])
    with np.load("o.npz") as z:
        np.testing.assert_allclose(z["0/out/fp32"], want[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(z["0/aux/fp32"], want[1], rtol=1e-5, atol=1e-6)


def test_run_leaves_the_input_folder_as_it_was(seg: Path, photos: Path) -> None:
    before = _digest(photos)
    for _ in range(2):
        result = CliRunner().invoke(app, ["run", str(seg), str(photos), "--model", SEG])
        assert result.exit_code == 0, result.output
    assert _digest(photos) == before
    assert sorted(p.name for p in Path("mdla-out").iterdir()) == [
        "chelsea.segmenter.out.overlay.png",
        "chelsea.segmenter.out.png",
        "coffee.segmenter.out.overlay.png",
        "coffee.segmenter.out.png",
    ]
    assert "chelsea.png: mdla-out/chelsea.segmenter.out.png" in result.output


def test_written_into_the_input_folder_nothing_is_read_back(seg: Path, photos: Path) -> None:
    """--out-dir the input folder itself: a second run and a calibration skip the PNGs and the
    .npz written there (no `chelsea.segmenter.out.segmenter.out.png`, the same calibration)."""
    compile_args = ["compile", SEG, "--calib", str(photos), "--count", "9", "--json", "-o"]
    first = CliRunner().invoke(app, [*compile_args, "a.mdla"])
    assert first.exit_code == 0, first.output
    run = ["run", str(seg), str(photos), "--out-dir", str(photos)]
    for _ in range(2):
        result = CliRunner().invoke(app, [*run, "--save-outputs", str(photos / "o.npz")])
        assert result.exit_code == 0, result.output
    assert sorted(p.name for p in photos.iterdir()) == [
        "chelsea.png",
        "chelsea.segmenter.out.overlay.png",
        "chelsea.segmenter.out.png",
        "coffee.png",
        "coffee.segmenter.out.overlay.png",
        "coffee.segmenter.out.png",
        "o.npz",
    ]
    assert [p.name for p in input_files(photos)] == ["chelsea.png", "coffee.png"]
    again = CliRunner().invoke(app, [*compile_args, "b.mdla"])
    assert again.exit_code == 0, again.output
    figures = [json.loads(r.stdout) for r in (first, again)]
    for doc in figures:
        doc.pop("seconds"), doc.pop("out"), doc.pop("fp32_graph")
    assert figures[0] == figures[1]
    assert Path("a.mdla").read_bytes() == Path("b.mdla").read_bytes()


def test_a_written_file_named_as_input_is_refused(seg: Path, photos: Path) -> None:
    assert CliRunner().invoke(app, ["run", str(seg), str(photos)]).exit_code == 0
    png = Path("mdla-out") / "chelsea.segmenter.out.png"
    result = CliRunner().invoke(app, ["run", str(seg), str(png)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: `{png}` is a file workbench wrote")


def test_an_out_dir_that_is_a_file_fails_before_any_run(seg: Path, photos: Path) -> None:
    Path("taken").write_text("")
    result = CliRunner().invoke(app, ["run", str(seg), str(photos), "--out-dir", "taken"])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: cannot use `taken` as the output folder")
    assert "running" not in result.stderr


def test_the_mark_tells_written_files_apart(tmp_path: Path) -> None:
    img = Image.new("RGB", (4, 4))
    mine, theirs = tmp_path / "a.png", tmp_path / "b.png"
    mine.write_bytes(imgs.png_bytes(img))
    img.save(theirs)
    np.savez(tmp_path / "c.npz", x=np.zeros(3))
    (tmp_path / "d.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0")  # truncated: not ours
    assert [is_written(tmp_path / n) for n in ("a.png", "b.png", "c.npz", "d.png")] == [
        True,
        False,
        False,
        False,
    ]


def test_a_run_that_writes_nothing_leaves_no_folder(photos: Path) -> None:
    """A classifier's run (no picture, no --save-outputs) makes no mdla-out/."""
    out = photos.parent / "tiny.mdla"
    args = ["compile", TINY_IMAGES, "--calib", "random", "--count", "1", "-o", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    result = CliRunner().invoke(app, ["run", str(out), str(photos / "chelsea.png")])
    assert result.exit_code == 0, result.output
    assert not Path("mdla-out").exists()


@pytest.mark.parametrize(
    ("target", "why"),
    [("gone/o.npz", "folder `gone` does not exist"), ("photos", "it is a folder")],
)
def test_save_outputs_that_cannot_be_written_fail_before_any_run(
    seg: Path, photos: Path, target: str, why: str
) -> None:
    result = CliRunner().invoke(app, ["run", str(seg), str(photos), "--save-outputs", target])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: cannot write --save-outputs `{target}`: {why}")
    assert not Path("mdla-out").exists()  # nothing ran
