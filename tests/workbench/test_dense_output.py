"""`workbench run` on a segmentation model writes its class map as a PNG into its output
folder: FP32 (left) and INT8 (right), each pixel the palette colour of the argmax over the
classes."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import mdla_ir
import mdla_runtime
from tests.workbench.test_torch_free_commands import BLOCKED
from workbench import dense, outputs, pipeline
from workbench import images as imgs
from workbench.cli import app
from workbench.commands.run import manifest_inputs

Array = np.ndarray[Any, Any]
SEG = f"{Path(__file__).with_name('seg_model.py')}:segmenter"
CLASSES, SIDE = 5, 224


@pytest.fixture(scope="module")
def seg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """seg_model.py's Segmenter compiled by `workbench compile` (calibrated on 2 photos)."""
    out = tmp_path_factory.mktemp("seg") / "seg.mdla"
    result = CliRunner().invoke(app, ["compile", SEG, "--count", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def photo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """photos/cat.png, with the working directory at tmp_path (`run` writes into mdla-out/)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "photos" / "cat.png"
    path.parent.mkdir()
    Image.fromarray(imgs.read_image("chelsea")).save(path)
    return path


def _panels(png: Path) -> tuple[Array, Array, Array]:
    rgb = np.asarray(Image.open(png).convert("RGB"))
    assert rgb.shape == (SIDE, 2 * SIDE + dense.GAP, 3)
    return rgb[:, :SIDE], rgb[:, SIDE : SIDE + dense.GAP], rgb[:, SIDE + dense.GAP :]


def _expected(manifest_path: Path, image: Path) -> tuple[Array, Array]:
    """The FP32 and INT8 class maps computed here, independently of `dense`."""
    manifest = mdla_runtime.load(manifest_path)
    ((_, x),) = manifest_inputs(manifest, [str(image)])
    q = mdla_runtime.open_target("emu").run(manifest, [x]).outputs[0]
    f = mdla_ir.run_float(pipeline.load_source(SEG).graph, [x])[0]
    return np.argmax(f[0], axis=0), np.argmax(q[0], axis=0)


def test_the_png_holds_the_argmax_of_fp32_and_of_int8(seg: Path, photo: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(seg), str(photo), "--model", SEG])
    assert result.exit_code == 0, result.output
    png = Path("mdla-out") / "cat.segmenter.out.png"
    f, q = _expected(seg, photo)
    agree = float(np.mean(f == q))
    assert f"class map of cat.png: {png} (FP32 | INT8, {100 * agree:.1f}% of pixels agree)" in (
        result.output.replace("\n", "")
    )
    left, gap, right = _panels(png)
    colours = dense.palette(CLASSES)
    np.testing.assert_array_equal(left, colours[f])
    np.testing.assert_array_equal(right, colours[q])
    assert (gap == 255).all()
    assert len(np.unique(f)) >= 3
    assert len(np.unique(q)) >= 3
    assert 0.8 < agree < 1.0  # INT8 moves some boundaries, and the panels show it
    # `aux` is [1, 3, 112, 112]: not at the input's size, so no class map of it
    assert sorted(p.name for p in png.parent.iterdir()) == [
        "cat.segmenter.out.overlay.png",  # the INT8 map on the photo, with a legend
        "cat.segmenter.out.png",
    ]
    assert [p.name for p in photo.parent.iterdir()] == ["cat.png"]  # the input folder as it was


def test_json_records_each_class_map(seg: Path, photo: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(seg), str(photo), "--json", "--model", SEG])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    f, q = _expected(seg, photo)
    (cmap,) = entry["class_maps"]
    assert cmap["png"] == str(Path("mdla-out") / "cat.segmenter.out.png")
    assert cmap["fp32_int8_agree"] == round(float(np.mean(f == q)), 4)
    assert cmap["overlay"] == str(Path("mdla-out") / "cat.segmenter.out.overlay.png")
    assert [c["class"] for c in cmap["legend"]] == sorted(set(f.ravel()) | set(q.ravel()))
    assert "no_fp32" not in entry


def test_without_the_model_the_png_is_int8_alone_and_run_says_why(
    seg: Path, photo: Path, tmp_path: Path
) -> None:
    """A model that no longer imports (here: renamed) keeps the INT8 map, and says why."""
    manifest = mdla_runtime.load(seg)
    maps = dense.ClassMaps(manifest, model=str(tmp_path / "gone.py:segmenter"))
    ((_, x),) = manifest_inputs(manifest, [str(photo)])
    q = mdla_runtime.open_target("emu").run(manifest, [x]).outputs
    entry = maps.entry(str(photo), x, q)
    assert "gone.py" in entry["no_fp32"]
    png = Path("mdla-out") / "cat.segmenter.out.png"
    ((cmap),) = entry["class_maps"]
    assert (cmap["png"], cmap["fp32_int8_agree"]) == (str(png), None)
    assert "overlay" not in cmap  # made without the photos' preprocessing: no overlay
    rgb = np.asarray(Image.open(png).convert("RGB"))
    np.testing.assert_array_equal(rgb, dense.palette(CLASSES)[np.argmax(q[0][0], axis=0)])
    lines = maps.lines([{"image": "cat.png", **entry}])
    assert lines[0] == f"class map of cat.png: {png} (INT8 only)"
    assert lines[1].startswith("  no FP32 side: cannot import")


def test_without_model_run_names_the_flag_and_imports_nothing(seg: Path, photo: Path) -> None:
    """A .mdla compiled before the float graph was stored beside it (none here) and no
    --model: the INT8 map alone, and the two ways to the FP32 side named."""
    old = photo.parent.parent / "old.mdla"
    old.write_bytes(seg.read_bytes())
    result = CliRunner().invoke(app, ["run", str(old), str(photo)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "(INT8 only)" in text
    assert "no FP32 side: not shown: a .mdla never names code to run; give --model SPEC" in text
    assert f"the file records spec {SEG!r}" in text


def test_another_model_under_the_same_spec_gives_no_fp32_side(seg: Path) -> None:
    manifest = mdla_runtime.load(seg)
    other = dataclasses.replace(manifest, model={**manifest.model, "source_hash": "0" * 64})
    graph, why = dense.float_graph(other, SEG, None)
    assert graph is None
    assert "imports as another model than the manifest's" in why
    assert "--weights" in why


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("seg.mdla", "is a compiled manifest"),  # mdla_compile's OptionError
        (f"{SEG}(width=", "cannot import"),  # a malformed spec
    ],
)
def test_a_model_that_does_not_load_gives_no_fp32_side(seg: Path, model: str, why: str) -> None:
    graph, text = dense.float_graph(mdla_runtime.load(seg), model, None)
    assert graph is None
    assert text.startswith(f"cannot import `{model}`")
    assert why in text


@pytest.mark.parametrize(
    ("shape", "input_shape", "is_map"),
    [
        ((1, 21, 64, 64), (1, 3, 64, 64), True),  # a segmentation head at the input's size
        ((1, 2, 8, 12), (1, 3, 8, 12), True),
        ((1, 1, 64, 64), (1, 3, 64, 64), False),  # one channel: a mask, not K classes
        ((1, 24, 20, 20), (1, 3, 320, 320), False),  # a detector's head map
        ((1, 3, 96, 96), (1, 3, 32, 32), False),  # super-resolution output
        ((1, 1000), (1, 3, 224, 224), False),  # a classifier
        ((2, 21, 64, 64), (2, 3, 64, 64), False),  # a batch
        ((1, 21, 1, 1), (1, 3, 1, 1), False),  # one pixel
    ],
)
def test_the_class_map_rule(
    shape: tuple[int, ...], input_shape: tuple[int, ...], is_map: bool
) -> None:
    assert dense.is_class_map(shape, input_shape) is is_map


def test_palette_is_fixed_and_tells_classes_apart() -> None:
    colours = dense.palette(256)
    assert colours[:4].tolist() == [[0, 0, 0], [128, 0, 0], [0, 128, 0], [128, 128, 0]]
    assert colours[8].tolist() == [64, 0, 0]  # the next bits one place lower
    assert len({tuple(c) for c in colours.tolist()}) == 256


def test_png_names_keep_to_the_output_folder(tmp_path: Path) -> None:
    image = tmp_path / "a b.jpg"
    image.write_bytes(b"")
    out = tmp_path / "out"
    assert outputs.picture(out, str(image), "net", "out") == out / "a_b.net.out.png"
    assert outputs.picture(out, str(image), "my/net", "x:0") == out / "a_b.my_net.x_0.png"
    assert outputs.picture(out, "chelsea", "net", "out") == out / "chelsea.net.out.png"


def test_without_torch_run_writes_the_int8_map_and_says_why(
    seg: Path, photo: Path, tmp_path: Path
) -> None:
    """On a phone (no torch) the FP32 side cannot be imported: the PNG is the INT8 map."""
    script = tmp_path / "blocked.py"
    script.write_text(textwrap.dedent(BLOCKED))
    done = subprocess.run(
        [sys.executable, str(script), "run", str(seg), str(photo), "--model", SEG],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    png = Path("mdla-out") / "cat.segmenter.out.png"
    out = done.stdout.replace("\n", "")
    assert f"class map of cat.png: {png} (INT8 only)" in out
    assert "no FP32 side: cannot import" in out
    assert "torch" in out
    _, q = _expected(seg, photo)
    rgb = np.asarray(Image.open(png).convert("RGB"))
    np.testing.assert_array_equal(rgb, dense.palette(CLASSES)[q])


def test_a_full_disk_keeps_the_old_png_and_names_it(
    seg: Path, photo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The class map goes through the one atomic writer: on ENOSPC the old PNG stays (not a
    0-byte file) and the error names the PNG."""
    png = Path("mdla-out") / "cat.segmenter.out.png"
    png.parent.mkdir()
    png.write_bytes(b"old")
    real_fsync = os.fsync

    def full(fd: int) -> None:
        if ".cat.segmenter.out.png." in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    result = CliRunner().invoke(app, ["run", str(seg), str(photo)])
    assert result.exit_code == 1, result.output
    assert f"No space left on device: '{png}'" in result.stderr
    assert png.read_bytes() == b"old"
    assert not [p for p in png.parent.iterdir() if p.name.endswith(".tmp")]


def test_an_array_input_gets_its_class_map_without_an_overlay(seg: Path, photo: Path) -> None:
    """A .npy of the prepared photo: the same FP32 | INT8 maps (the FP32 side from the float
    graph stored beside the .mdla), and no overlay, there being no photo to draw on."""
    manifest = mdla_runtime.load(seg)
    ((_, x),) = manifest_inputs(manifest, [str(photo)])
    np.save("cat.npy", x)
    result = CliRunner().invoke(app, ["run", str(seg), "cat.npy", "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    (record,) = entry["class_maps"]
    assert "overlay" not in record
    left, _, right = _panels(Path(record["png"]))
    f, q = _expected(seg, photo)
    colours = dense.palette(CLASSES)
    np.testing.assert_array_equal(left, colours[f])
    np.testing.assert_array_equal(right, colours[q])
    assert record["fp32_int8_agree"] == round(float(np.mean(f == q)), 4)
