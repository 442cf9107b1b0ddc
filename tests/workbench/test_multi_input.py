"""`run` and `validate` feed a model of two inputs from an `.npz`: its arrays matched to the
inputs by name (or, for `arr_0, arr_1`, in order), and a missing, extra or mis-shaped array
refused in one line that names the input, its shape and dtype."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_compile
import mdla_ir
import mdla_quant
from tests.workbench.two_input_model import SHAPES
from workbench.cli import app

Array = np.ndarray[Any, Any]
TWO = f"{Path(__file__).with_name('two_input_model.py')}:two_branches"


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, mdla_compile.Compiled]:
    """two_input_model.py compiled (calibrated on 2 random samples), with its float graph."""
    compiled = mdla_compile.compile(mdla_compile.CompileOptions(TWO, calib="random", count=2))
    out = tmp_path_factory.mktemp("two") / "two.mdla"
    compiled.save(out)
    return out, compiled


def _arrays(seed: int) -> list[Array]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(0, 1, s).astype(np.float32) for s in SHAPES]


def test_the_inputs_are_named_after_the_forward_arguments(
    two: tuple[Path, mdla_compile.Compiled],
) -> None:
    assert two[1].source.graph.inputs == ("image", "depth")


@pytest.mark.parametrize("by_name", [True, False])
def test_run_feeds_each_input_its_array(
    two: tuple[Path, mdla_compile.Compiled], tmp_path: Path, by_name: bool
) -> None:
    path, compiled = two
    xs = _arrays(1)
    if by_name:  # saved in the other order: the keys decide
        np.savez(tmp_path / "x.npz", depth=xs[1], image=xs[0])
    else:
        np.savez(tmp_path / "x.npz", xs[0], xs[1])
    saved = tmp_path / "o.npz"
    args = ["run", str(path), str(tmp_path / "x.npz"), "--save-outputs", str(saved)]
    args += ["--out-dir", str(tmp_path), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    assert entry["image"] == "x.npz"
    (name,) = compiled.source.graph.outputs
    want = mdla_quant.run_int8(compiled.qgraph, xs)[0]
    floats = mdla_ir.run_float(compiled.source.graph, xs)[0]
    with np.load(saved) as z:
        np.testing.assert_array_equal(z[f"0/{name}"], want)
        np.testing.assert_allclose(z[f"0/{name}/fp32"], floats, rtol=1e-5, atol=1e-6)
    other = mdla_quant.run_int8(compiled.qgraph, [xs[0], np.zeros_like(xs[1])])[0]
    assert not np.array_equal(want, other)  # the second input matters


@pytest.mark.parametrize(
    ("arrays", "line"),
    [
        (
            {"image": np.zeros(SHAPES[0], np.float32)},
            "`x.npz` has no array `depth` for `two_branches`'s input 1, [1, 2, 8, 8] float32: "
            "save it with np.savez(..., depth=x) (keys given: image)",
        ),
        (
            {"image": np.zeros(SHAPES[0], np.float32), "depth": np.zeros((1, 2, 4, 4))},
            "`x.npz` array `depth` has shape [1, 2, 4, 4]; the model's input 1 is [1, 2, 8, 8] "
            "float32 (`depth`)",
        ),
        (
            {"image": np.zeros(SHAPES[0]), "depth": np.zeros(SHAPES[1]), "mask": np.zeros(1)},
            "`x.npz` holds array `mask`, which is none of `two_branches`'s inputs (image, depth)",
        ),
        (
            {"arr_0": np.zeros(SHAPES[0], np.float32)},
            "`x.npz` holds 1 array(s); `two_branches` takes 2 input(s): no array for input 1 "
            "([1, 2, 8, 8] float32 (`depth`))",
        ),
    ],
)
def test_a_wrong_npz_is_one_line_naming_the_input(
    two: tuple[Path, mdla_compile.Compiled],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    arrays: dict[str, Array],
    line: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    np.savez(tmp_path / "x.npz", **arrays)
    result = CliRunner().invoke(app, ["run", str(two[0]), "x.npz"])
    assert result.exit_code == 1, result.output
    assert line in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_validate_compares_on_an_npz(
    two: tuple[Path, mdla_compile.Compiled], tmp_path: Path
) -> None:
    """validate compiles the same model again (the same random calibration): its INT8
    reference is the fixture's qgraph on these arrays, and the emulator agrees."""
    compiled, xs = two[1], _arrays(2)
    np.savez(tmp_path / "x.npz", image=xs[0], depth=xs[1])
    args = ["validate", TWO, "--calib", "random", "--count", "2", str(tmp_path / "x.npz")]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (row,) = doc["inputs"]
    assert row["name"] == "x.npz"
    ref = mdla_quant.run_int8(compiled.qgraph, xs)[0]
    fp32 = mdla_ir.run_float(compiled.source.graph, xs)[0]
    assert row["top1"]["ref"]["index"] == int(np.argmax(ref))
    assert row["top1"]["fp32"]["index"] == int(np.argmax(fp32))
    assert row["top1"]["device"] == row["top1"]["ref"]
    f, q = fp32.ravel().astype(np.float64), ref.ravel().astype(np.float64)
    cosine = float(f @ q / np.sqrt((f @ f) * (q @ q)))
    assert doc["outputs"][0]["ref"]["cosine"] == pytest.approx(cosine, rel=1e-9)


def test_compile_calibrates_on_npz_matched_by_name(
    two: tuple[Path, mdla_compile.Compiled], tmp_path: Path
) -> None:
    """`--calib DIR` of .npz files saved in the other order than the inputs': each array goes
    to the input it is named after (in the file's order, the shapes would not fit)."""
    folder = tmp_path / "calib"
    folder.mkdir()
    samples = [_arrays(10 + k) for k in range(2)]
    for k, xs in enumerate(samples):
        np.savez(folder / f"s{k}.npz", depth=xs[1], image=xs[0])
    calib = mdla_compile.CompileOptions(TWO, calib=str(folder), count=2)
    given = mdla_compile.CompileOptions(TWO, calib=samples, count=2)
    got, want = mdla_compile.compile(calib), mdla_compile.compile(given)
    x = _arrays(3)
    np.testing.assert_array_equal(
        mdla_quant.run_int8(got.qgraph, x)[0], mdla_quant.run_int8(want.qgraph, x)[0]
    )
    assert got.qgraph.tensors == want.qgraph.tensors
