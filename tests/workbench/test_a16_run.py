"""`compile --a16 auto` then `run --on emu`, end to end on the shipped target: the emulator's
output (the bytes `run` saves) equals run_int8's on the compiled graph, bit for bit, and the
int16 activations the choice made are in the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

import mdla_runtime
from mdla_compile import CompileOptions, compile
from mdla_ir import OpKind
from mdla_ir.partitions import partitions
from mdla_quant import run_int8
from mdla_runtime.export.tflite import run_tflite_reference
from mdla_runtime.format.container import TENSOR_QUANT16_SYMM
from tests.workbench.conftest import TINY
from tests.workbench.test_adb_route import _engine as engine
from workbench.cli import app


def test_an_auto_a16_compile_runs_on_the_emulator_as_run_int8(tmp_path: Path) -> None:
    options = CompileOptions(TINY, calib="random", count=8, a16="auto:100%")
    compiled = compile(options)
    assert compiled.a16, "the choice is empty: nothing int16 to run"
    qgraph = compiled.qgraph
    assert any(qgraph.tensors[c.tensor].dtype == "int16" for c in compiled.a16)
    path = tmp_path / "tiny.mdla"
    compiled.save(path)
    ins, out = tmp_path / "ins", tmp_path / "out.npz"
    args = ["run", str(path), "--on", "emu", "--json"]  # a random input (no preprocessing)
    result = CliRunner().invoke(app, [*args, "--save-inputs", str(ins), "--save-outputs", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["runs"][0]["device"] == "mtk-mdla"
    manifest = mdla_runtime.load(path)
    sent = (ins / "random" / "input_0.bin").read_bytes()
    (spec,) = manifest.inputs
    scale, zp = spec.scale, spec.zero_point
    nhwc = np.frombuffer(sent, np.int8).reshape(qgraph.tensors[qgraph.inputs[0]].shape)
    real = (nhwc.astype(np.float32) - np.float32(zp)) * np.float32(scale)
    (want,) = run_int8(qgraph, [real.transpose(0, 3, 1, 2)], raw=True)  # model layout: NCHW
    with np.load(out) as saved:
        (key,) = [k for k in saved.files if k.endswith(f"/{want.dtype}")]  # the output too
        np.testing.assert_array_equal(saved[key].reshape(want.shape), want)
    assert want.dtype == np.int16  # at 100 % the classifier's output is worth 16 bits


def test_cpu_quantize_runs_the_requantizations_on_the_cpu(tmp_path: Path) -> None:
    """`--cpu QUANTIZE`: a16's QUANTIZE ops (which the placement never sees: the quantizer
    inserts them) run in CPU partitions, and the emulator's result is run_int8's."""
    options = CompileOptions(TINY, calib="random", count=4, a16="pool", cpu=("QUANTIZE",))
    compiled = compile(options)
    qgraph = compiled.qgraph
    requant = tuple(op.name for op in qgraph.ops if op.kind is OpKind.QUANTIZE)
    assert requant
    assert qgraph.provenance.cpu_ops == requant
    on_cpu = [p.on_cpu for p in partitions(qgraph)]
    assert True in on_cpu
    assert False in on_cpu
    path = tmp_path / "tiny.mdla"
    compiled.save(path)
    sample = compiled.calibration[0]
    got = mdla_runtime.open_target("emu").run(mdla_runtime.load(path), sample).raw_outputs
    for g, w in zip(got, run_int8(qgraph, sample, raw=True), strict=True):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


def test_an_int16_graph_output_compiles_runs_and_saves_its_codes(tmp_path: Path) -> None:
    """`--a16 'fc*'` names the classifier's output: the .mdla's output is int16, `run` saves
    its codes under `/int16`, equal to run_int8's and to LiteRT's on the exported .tflite."""
    path, tflite = tmp_path / "tiny.mdla", tmp_path / "tiny.tflite"
    args = ["compile", TINY, "--calib", "random", "--count", "4", "--a16", "fc*"]
    result = CliRunner().invoke(app, [*args, "-o", str(path), "--tflite", str(tflite)])
    assert result.exit_code == 0, result.output
    manifest = mdla_runtime.load(path)
    (spec,) = manifest.outputs
    assert manifest.operands[spec.operand].type == TENSOR_QUANT16_SYMM
    ins, out = tmp_path / "ins", tmp_path / "out.npz"
    run = ["run", str(path), "--on", "emu", "--save-inputs", str(ins), "--save-outputs", str(out)]
    result = CliRunner().invoke(app, run)
    assert result.exit_code == 0, result.output
    (sent,) = [np.fromfile(ins / "random" / "input_0.bin", np.int8)]
    (litert,) = run_tflite_reference(tflite.read_bytes(), [sent.reshape(manifest_input(path))])
    with np.load(out) as saved:
        assert not [k for k in saved.files if k.endswith("/int8")]
        (key,) = [k for k in saved.files if k.endswith("/int16")]
        codes = saved[key]
        assert codes.dtype == np.int16
        np.testing.assert_array_equal(codes.reshape(litert.shape), litert)
        real = saved[key.removesuffix("/int16")]
        np.testing.assert_array_equal(real, codes.astype(np.float32) * np.float32(spec.scale))
    check = CliRunner().invoke(app, ["check", str(path), "--on", "emu", "--json"])
    assert check.exit_code == 0, check.output
    why = {op["name"]: op.get("int16") for op in json.loads(check.stdout)["ops"]}
    assert why["fc"] == why["fc.flatten"] == "named by --a16 fc*"  # the conv and its reshape
    assert why["pool"] is None


def test_the_adb_route_loads_an_int16_output(tmp_path: Path) -> None:
    """`run --load-outputs` reads the engine's int16 output file (2 bytes a code) as `run`
    reads its own: the same codes and floats."""
    path = tmp_path / "tiny.mdla"
    args = ["compile", TINY, "--calib", "random", "--count", "2", "--a16", "fc*", "-o", str(path)]
    assert CliRunner().invoke(app, args).exit_code == 0
    ins, here, there = tmp_path / "ins", tmp_path / "here.npz", tmp_path / "there.npz"
    run = ["run", str(path), "--on", "emu", "--save-inputs", str(ins), "--save-outputs"]
    assert CliRunner().invoke(app, [*run, str(here)]).exit_code == 0
    engine(path, ins / "random")
    load = ["run", str(path), "--load-outputs", str(ins), "--save-outputs", str(there)]
    result = CliRunner().invoke(app, load)
    assert result.exit_code == 0, result.output
    with np.load(here) as p, np.load(there) as q:
        (key,) = [k for k in p.files if k.endswith("/int16")]
        for k in (key, key.removesuffix("/int16")):
            np.testing.assert_array_equal(p[k], q[k])


def manifest_input(path: Path) -> tuple[int, ...]:
    m = mdla_runtime.load(path)
    return tuple(m.operands[m.inputs[0].operand].dims)
