"""`workbench export MODEL --cpu ...` and `compile --cpu ... --tflite` (issue 17): the placement
is printed, the .tflite is one graph, and on LiteRT's BUILTIN_REF it writes the class map the
.mdla writes on the emulator; a .mdla or an op with no .tflite form is one clear line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.tools import flatbuffer_utils
from typer.testing import CliRunner

import mdla_runtime
from mdla_ir.affine import quantize_input
from mdla_ir.ops import OpKind
from mdla_runtime.export import ops as export_ops
from mdla_runtime.export.tflite import run_tflite_reference
from workbench.cli import app

SEG = str(Path(__file__).with_name("argmax_models.py")) + ":argmax_segmenter"
CALIB = ["--calib", "random", "--count", "2"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """seg.tflite written by `export --cpu ARGMAX`, and what export printed."""
    out = tmp_path_factory.mktemp("export") / "seg.tflite"
    result = CliRunner().invoke(app, ["export", SEG, "--cpu", "ARGMAX", *CALIB, "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    return out, result.output


@pytest.fixture(scope="module")
def compiled(exported: tuple[Path, str]) -> tuple[Path, Path]:
    """seg.mdla and both.tflite, written together by `compile --cpu ARGMAX --tflite`."""
    out = exported[0].parent
    args = ["compile", SEG, "--cpu", "ARGMAX", *CALIB, "--tflite", str(out / "both.tflite")]
    result = CliRunner().invoke(app, [*args, "-o", str(out / "seg.mdla")])
    assert result.exit_code == 0, result.output + result.stderr
    return out / "seg.mdla", out / "both.tflite"


def test_export_prints_the_placement_and_writes_one_graph(exported: tuple[Path, str]) -> None:
    tflite, output = exported
    # the placement table, as compile prints it
    assert "argmax_segmenter: 2 partition(s), 4 op(s) on mtk-mdla, 1 on cpu" in output
    assert f"wrote {tflite} (" in output
    model = flatbuffer_utils.read_model_from_bytearray(tflite.read_bytes())
    assert len(model.subgraphs) == 1
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    ops = [codes[op.opcodeIndex] for op in model.subgraphs[0].operators]
    assert ops[-2:] == [schema.BuiltinOperator.ARG_MAX, schema.BuiltinOperator.CAST]
    x = np.random.default_rng(0).integers(-128, 128, (1, 32, 32, 3)).astype(np.int8)
    (classes,) = run_tflite_reference(tflite.read_bytes(), [x])
    assert (classes.dtype, classes.shape) == (np.int8, (1, 32, 32))
    assert set(np.unique(classes).tolist()) <= set(range(5))  # the segmenter's 5 classes


def test_compile_writes_the_same_tflite_and_litert_gives_the_mdlas_class_map(
    exported: tuple[Path, str], compiled: tuple[Path, Path]
) -> None:
    """One quantization, two files: the .tflite on LiteRT and the .mdla on the emulator (NPU
    partition, then the engine's cpu ARGMAX) write the same class map, byte for byte."""
    mdla, both = compiled
    assert both.read_bytes() == exported[0].read_bytes()
    manifest = mdla_runtime.load(mdla)
    assert [p.device for p in manifest.partitions] == ["mtk-mdla", "cpu"]
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    result = mdla_runtime.open_target("emu").run(manifest, [x])
    (spec,) = manifest.inputs
    codes = quantize_input(x.transpose(0, 2, 3, 1), np.float32(spec.scale), spec.zero_point)
    (theirs,) = run_tflite_reference(both.read_bytes(), [codes])
    np.testing.assert_array_equal(theirs, result.raw_outputs[0].reshape(theirs.shape))
    assert len(np.unique(theirs)) >= 2


def test_a_manifest_is_refused_with_what_to_do_instead(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["export", "seg.mdla", "-o", str(tmp_path / "seg.tflite")])
    assert result.exit_code == 2
    assert "a .mdla holds Neuron operations, not the int8 graph" in result.stderr
    assert "workbench compile MODEL --tflite OUT.tflite" in result.stderr


def test_a_host_op_with_no_tflite_form_is_exit_3(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(export_ops._EMITTERS, OpKind.ARGMAX)  # as a new host op would be
    out = tmp_path / "seg.tflite"
    result = runner.invoke(app, ["export", SEG, "--cpu", "ARGMAX", *CALIB, "-o", str(out)])
    assert result.exit_code == 3
    assert result.stderr.strip().splitlines()[-1] == (
        "error: op `argmax`: ARGMAX has no .tflite export (a CPU partition's host op: the .mdla "
        "runs it, a .tflite cannot hold it yet)"
    )
    assert not out.exists()
