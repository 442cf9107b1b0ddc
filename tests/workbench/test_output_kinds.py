"""Each output's kind is decided at compile, recorded in the manifest (`model.output_kinds`, read
by the Python and the C reader), overridable with `--output-kind NAME=KIND`, shown by `inspect`,
and what `run` goes by; a file written before the record reads with compile's guess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_runtime
from mdla_compile import OptionError, kinds
from mdla_compile.kinds import Out
from mdla_ir import Postprocess
from mdla_runtime.build import engine_path
from mdla_runtime.testing import pack, split
from workbench.cli import app

HERE = Path(__file__).parent
SEG = f"{HERE / 'seg_model.py'}:segmenter"  # outputs `out` [1, 5, 64, 64] and `aux` [1, 3, 32, 32]
SHAPE = (1, 3, 64, 64)
COMPILE = ("compile", SEG, "--input-shape", "1,3,64,64", "--calib", "random", "--count", "2")


def test_the_guess_by_shape() -> None:
    outs = [
        Out("logits", (1, 10)),
        Out("one", (1, 1)),
        Out("map", (1, 4, 64, 64)),
        Out("half", (1, 4, 32, 32)),
        Out("idx", (1, 64, 64), 1.0, 0),
        Out("idx_scaled", (1, 64, 64), 0.5, 0),  # not a CPU ARGMAX's index map
    ]
    assert kinds.guess(outs, SHAPE) == ("logits", "raw", "classmap", "raw", "classmap", "raw")


def test_the_guess_for_detectors() -> None:
    post = Postprocess("ssd", (64, 64), 3, ((2.0,),), (0.2, 0.9), (10, 10, 5, 5), 4.0, 0.1,
                       0.5, 10, 5)  # fmt: skip
    heads = [Out("reg", (1, 16, 8, 8)), Out("cls", (1, 12, 8, 8))]
    assert kinds.guess(heads, SHAPE, post) == ("boxes", "boxes")
    yolo = [Out("y", (1, 116, 500)), Out("protos", (1, 32, 40, 40))]
    shape = (1, 3, 160, 160)  # anchors 20² + 10² + 5² = 525, not 500
    assert kinds.guess(yolo, shape, module="SegmentationModel") == ("raw", "raw")
    yolo[0] = Out("y", (1, 116, 525))
    assert kinds.guess(yolo, shape, module="SegmentationModel") == ("boxes", "raw")
    assert kinds.guess(yolo, shape, module="MyNet") == ("raw", "raw")


def test_overrides_and_their_errors() -> None:
    outs = [Out("heat", (1, 17, 16, 16)), Out("xy", (1, 17, 2)), Out("s", (1, 1))]
    guessed = kinds.guess(outs, SHAPE)
    assert guessed == ("raw", "raw", "raw")
    got = kinds.overridden(guessed, outs, ["heat=keypoints", "xy=keypoints"], detector=False)
    assert got == ("keypoints", "keypoints", "raw")
    cases = {
        "heat=box": "the kind is one of logits, classmap, boxes, keypoints, raw",
        "keypoints": "has 3 outputs; name one: NAME=keypoints with NAME one of heat, xy, s",
        "hat=raw": "no output `hat`; the outputs are heat, xy, s",
        "s=logits": "output `s` [1, 1] cannot be logits: logits need two or more values",
        "s=classmap": "cannot be classmap: a class map is [1, K, H, W] scores",
        "s=keypoints": "cannot be keypoints: keypoints are [1, K, H, W] heatmaps",
        "heat=boxes": "cannot be boxes: boxes need a decoder",
    }
    for value, why in cases.items():
        with pytest.raises(OptionError, match=r"^--output-kind ") as info:
            kinds.overridden(guessed, outs, [value], detector=False)
        assert why in str(info.value), (value, str(info.value))
    one = [Out("y", (1, 5, 8, 8))]
    assert kinds.overridden(("raw",), one, ["classmap"], detector=False) == ("classmap",)


def _compile(tmp_path: Path, name: str, *extra: str) -> Path:
    out = tmp_path / name
    result = CliRunner().invoke(app, [*COMPILE, "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    return out


def _inspect(path: Path) -> dict[str, object]:
    result = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert isinstance(doc, dict)
    return doc


def _c_reader_accepts(path: Path) -> None:
    proc = subprocess.run(
        [str(engine_path()), str(path), "--check", "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["ok"] is True


def test_compile_records_the_kinds_and_inspect_shows_them(tmp_path: Path) -> None:
    guessed = _compile(tmp_path, "seg.mdla")
    named = _compile(tmp_path, "named.mdla", "--output-kind", "aux=keypoints")
    assert mdla_runtime.load(guessed).provenance.output_kinds == ("classmap", "raw")
    assert mdla_runtime.load(named).provenance.output_kinds == ("classmap", "keypoints")
    for path in (guessed, named):
        _c_reader_accepts(path)
    doc = _inspect(named)
    assert [o["kind"] for o in doc["outputs"]] == ["classmap", "keypoints"]  # type: ignore[index]
    assert doc["output_kinds_recorded"] is True
    text = CliRunner().invoke(app, ["inspect", str(named)], env={"COLUMNS": "200"}).output
    assert "kind keypoints" in text
    assert "guessed" not in text

    header, data = split(guessed.read_bytes())  # as a file written before the record
    del header["model"]["output_kinds"]
    old = tmp_path / "old.mdla"
    old.write_bytes(pack(header, data))
    _c_reader_accepts(old)
    doc = _inspect(old)
    assert [o["kind"] for o in doc["outputs"]] == ["classmap", "raw"]  # type: ignore[index]
    assert doc["output_kinds_recorded"] is False
    text = CliRunner().invoke(app, ["inspect", str(old)], env={"COLUMNS": "200"}).output
    assert "kind classmap (guessed: not recorded in this file)" in text


def test_a_bad_name_fails_before_calibration(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, [*COMPILE, "-o", str(tmp_path / "x.mdla"), "--output-kind", "auxx=raw"]
    )
    assert result.exit_code == 2, result.output
    assert "--output-kind auxx=raw: no output `auxx`; the outputs are out, aux" in result.output
    assert "calibrat" not in result.output.lower()
    assert not (tmp_path / "x.mdla").exists()


def test_run_goes_by_the_recorded_kind(tmp_path: Path) -> None:
    """The same model: with `out` recorded as a class map, run draws it; recorded as raw, run
    draws nothing and reports the output's statistics."""
    runs = {}
    for name, extra in (("map.mdla", ()), ("raw.mdla", ("--output-kind", "out=raw"))):
        path = _compile(tmp_path, name, *extra)
        result = CliRunner().invoke(
            app, ["run", str(path), "chelsea", "--json", "--out-dir", str(tmp_path / f"{name}.out")]
        )
        assert result.exit_code == 0, result.output
        runs[name] = json.loads(result.output)["runs"][0]
    assert runs["map.mdla"]["kind"] == "classmap"
    assert len(runs["map.mdla"]["class_maps"]) == 1
    assert runs["raw.mdla"]["kind"] == "raw"
    assert "class_maps" not in runs["raw.mdla"]
    assert runs["raw.mdla"]["output"]["shape"] == [1, 5, 64, 64]


def test_run_shows_a_keypoint_heads_positions(tmp_path: Path) -> None:
    """`out` named a keypoint head (5 heatmaps of 64 x 64): run gives each channel's argmax
    cell as (x, y), those of the INT8 output it saved, in --json and in the table."""
    path = _compile(tmp_path, "kp.mdla", "--output-kind", "out=keypoints")
    folder = tmp_path / "o"
    folder.mkdir()
    args = ["run", str(path), "chelsea", "--out-dir", str(folder)]
    result = CliRunner().invoke(app, [*args, "--json", "--save-outputs", str(folder / "o.npz")])
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)["runs"][0]
    assert run["kind"] == "keypoints"
    with np.load(folder / "o.npz") as saved:
        maps = saved["0/out"][0]  # (5, 64, 64), INT8 dequantized
    cells = [np.unravel_index(int(np.argmax(m)), m.shape) for m in maps]
    assert run["keypoints"] == [[float(x), float(y)] for y, x in cells]
    table = CliRunner().invoke(app, args, env={"COLUMNS": "200"}).output
    first = run["keypoints"][0]
    assert f"5 keypoints (x, y): ({first[0]:g}, {first[1]:g}) " in table
