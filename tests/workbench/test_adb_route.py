"""The adb route: `run --save-inputs` writes the exact bytes the engine receives (with a JSON of
shape, dtype, scale and zero point); the engine run by hand on them (as `adb shell` would)
writes output files that `run --load-outputs` reports exactly as `run` reports its own run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_runtime
from mdla_runtime.build import engine_path
from mdla_runtime.engine.target import quantize
from workbench.cli import app
from workbench.commands.run import manifest_inputs

HERE = Path(__file__).parent
SEG = f"{HERE / 'seg_model.py'}:segmenter"  # outputs `out` [1, 5, 64, 64] and `aux` [1, 3, 32, 32]


@pytest.fixture(scope="module")
def seg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("adb") / "seg.mdla"
    result = CliRunner().invoke(
        app,
        [
            *("compile", SEG, "--input-shape", "1,3,64,64", "--calib", "random", "--count", "2"),
            *("-o", str(path)),
        ],
    )
    assert result.exit_code == 0, result.output
    return path


def _run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["run", *args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def _engine(model: Path, folder: Path) -> None:
    """What `adb shell 'cd DIR && ./mdla-engine m.mdla --input input_0.bin --outdir .'` does."""
    target = mdla_runtime.open_target("emu")
    lib = str(target.lib)  # type: ignore[attr-defined]
    cmd = [str(engine_path()), str(model), "--input", str(folder / "input_0.bin")]
    cmd += ["--outdir", str(folder), "--device", "mtk-mdla", "--lib", lib, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_saved_inputs_round_trip_through_the_engine(seg: Path, tmp_path: Path) -> None:
    ins, a, b = tmp_path / "ins", tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    here = _run(str(seg), "chelsea", "--save-inputs", str(ins), "--out-dir", str(a),
                "--save-outputs", str(a / "here.npz"))  # fmt: skip
    assert here["saved_inputs"] == str(ins)
    manifest = mdla_runtime.load(seg)
    x = manifest_inputs(manifest, ["chelsea"])[0][1]
    saved = (ins / "chelsea" / "input_0.bin").read_bytes()
    assert saved == quantize(x, manifest.inputs[0]).tobytes()  # the engine's exact bytes
    doc = json.loads((ins / "chelsea" / "inputs.json").read_text())
    spec = manifest.inputs[0]
    assert doc["inputs"] == [
        {
            "file": "input_0.bin",
            "name": spec.name,
            "dtype": "int8",
            "shape": [1, 64, 64, 3],  # NHWC: as the device holds it
            "layout": "NHWC",
            "model_shape": [1, 3, 64, 64],
            "perm": [0, 2, 3, 1],
            "scale": spec.scale,
            "zero_point": spec.zero_point,
        }
    ]
    assert doc["engine"] == "./mdla-engine MODEL.mdla --input input_0.bin --outdir ."

    _engine(seg, ins / "chelsea")
    there = _run(str(seg), "chelsea", "--load-outputs", str(ins), "--out-dir", str(b),
                 "--save-outputs", str(b / "there.npz"))  # fmt: skip
    assert there["loaded_outputs"] == str(ins)
    mine, theirs = here["runs"][0], there["runs"][0]
    assert theirs["device"] == "loaded"
    assert theirs["kind"] == mine["kind"] == "classmap"
    maps = [(m["fp32_int8_agree"], m["legend"]) for m in mine["class_maps"]]
    assert [(m["fp32_int8_agree"], m["legend"]) for m in theirs["class_maps"]] == maps
    assert (
        Path(theirs["class_maps"][0]["png"]).read_bytes()
        == Path(mine["class_maps"][0]["png"]).read_bytes()
    )
    with np.load(a / "here.npz") as p, np.load(b / "there.npz") as q:
        for key in ("0/out", "0/out/int8", "0/aux", "0/aux/int8", "0/out/fp32"):
            assert np.array_equal(p[key], q[key]), key


def test_one_input_reads_the_engines_folder_itself(seg: Path, tmp_path: Path) -> None:
    """A run of one input may give the folder the engine wrote into (no <input>/ level)."""
    ins = tmp_path / "ins"
    _run(str(seg), "coffee", "--save-inputs", str(ins), "--out-dir", str(tmp_path / "a"))
    _engine(seg, ins / "coffee")
    flat = tmp_path / "flat"
    flat.mkdir()
    for k in (0, 1):
        (flat / f"output_{k}.bin").write_bytes((ins / "coffee" / f"output_{k}.bin").read_bytes())
    doc = _run(str(seg), "coffee", "--load-outputs", str(flat), "--out-dir", str(tmp_path / "b"))
    assert doc["runs"][0]["device"] == "loaded"
    assert doc["runs"][0]["class_maps"][0]["fp32_int8_agree"] > 0.5


def test_missing_or_wrong_output_files_are_one_line(seg: Path, tmp_path: Path) -> None:
    folder = tmp_path / "outs" / "chelsea"
    folder.mkdir(parents=True)
    args = ["run", str(seg), "chelsea", "--load-outputs", str(tmp_path / "outs")]
    args += ["--out-dir", str(tmp_path / "o")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert result.output.startswith(
        f"error: --load-outputs: no `{folder / 'output_0.bin'}` (output 0 `out` of input "
        f"`chelsea`); run the engine there with --outdir {folder}"
    )
    (folder / "output_0.bin").write_bytes(bytes(64 * 64 * 5))
    (folder / "output_1.bin").write_bytes(bytes(7))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert result.output.startswith(
        f"error: --load-outputs: `{folder / 'output_1.bin'}` holds 7 bytes; output 1 `aux` "
        "[1, 32, 32, 3] int8 is 3072: outputs of another model or input?"
    )
