"""The whole LipNet in one manifest (lipread.fullmodel, issue 17): the front-end INT8 on
mtk-mdla, the GRU tail a float32 cpu partition, run by mdla-engine; bit for bit run_int8, and
reading what the numpy tail reads on the three shipped samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_runtime
from lipread.checkpoint import load_checkpoint
from lipread.cli import app, route
from lipread.fullmodel import TAIL_OPS, compile_full, full_key
from lipread.grid import greedy_ctc
from lipread.pipeline import prepare, synthetic_calibration
from lipread.roi import Roi
from lipread.tail import tail_logits
from lipread.video import read_video
from mdla_ir.affine import dequantize_output
from mdla_ir.interp import to_model_layout
from mdla_ir.partitions import partitions
from mdla_quant import run_int8

Array = np.ndarray[Any, Any]
SAMPLES = sorted((Path(__file__).parents[2] / "apps/lipread/samples").glob("synthetic_*.mp4"))


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    """The demo model compiled for 75 frames into the tests' cache (conftest's LIPREAD_CACHE),
    so the CLI test below finds it there."""
    ckpt = load_checkpoint(None)
    cache = tmp_path_factory.getbasetemp() / "lipread-cache"
    out = cache / f"{full_key(ckpt, 75)}.mdla"
    path, qgraph = compile_full(ckpt, synthetic_calibration(ckpt.config, clips=2), 75, out=out)
    return path, qgraph, ckpt


@pytest.fixture(scope="module")
def target() -> mdla_runtime.Target:
    return mdla_runtime.open_target("emu")


def clip(video: Path, ckpt: Any) -> Array:
    return prepare(read_video(video), Roi("none"), ckpt.config)


def test_the_manifest_is_two_partitions_with_a_float32_output(full: tuple[Path, Any, Any]) -> None:
    path, qgraph, _ = full
    m = mdla_runtime.load(path)
    assert [(p.device, len(p.operations)) for p in m.partitions] == [("mtk-mdla", 16), ("cpu", 6)]
    cpu = partitions(qgraph)[1].ops
    assert set(TAIL_OPS) < set(cpu)
    assert m.outputs[0].name == "logits"
    assert m.outputs[0].shape == (75, 28)
    assert m.operands[m.outputs[0].operand].type == 3  # TENSOR_FLOAT32


def test_engine_logits_are_run_int8s_bit_for_bit(
    full: tuple[Path, Any, Any], target: mdla_runtime.Target
) -> None:
    path, qgraph, ckpt = full
    x = clip(SAMPLES[0], ckpt)
    got = target.run(path, [x]).outputs[0]
    want = run_int8(qgraph, [x])[0]
    assert got.dtype == want.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def int8_features(qgraph: Any, x: Array) -> Array:
    """The front-end's int8 output inside the whole model, dequantized, in the model's layout
    (1, C, T, h, w): what the numpy tail reads after the front-end-only manifest."""
    seen: dict[str, Array] = {}
    run_int8(qgraph, [x], observe=lambda name, v: seen.__setitem__(name, v))
    q = qgraph.tensors["pool3"].quant
    real = dequantize_output(seen["pool3"], q.scale[0], q.zero_point[0])
    fe = qgraph.with_(outputs=("pool3",), boundary={"pool3": (0, 2, 3, 4, 1)})
    return to_model_layout(fe, "pool3", real)


@pytest.mark.parametrize("video", SAMPLES, ids=lambda p: p.stem)
def test_engine_tail_reads_what_the_numpy_tail_reads(
    video: Path, full: tuple[Path, Any, Any], target: mdla_runtime.Target
) -> None:
    path, qgraph, ckpt = full
    x = clip(video, ckpt)
    engine = target.run(path, [x]).outputs[0]
    numpy_tail = tail_logits(int8_features(qgraph, x), ckpt.state)  # float64 GRUs
    assert np.abs(engine - numpy_tail).max() < 1e-4
    assert greedy_ctc(engine) == greedy_ctc(numpy_tail)


def test_cli_tail_engine_prints_the_numpy_tails_sentence(full: tuple[Path, Any, Any]) -> None:
    runner = CliRunner()
    video = str(SAMPLES[1])
    engine = runner.invoke(app, route([video, "--tail", "engine"]))
    assert engine.exit_code == 0, engine.output
    default = runner.invoke(app, route([video]))
    assert default.exit_code == 0, default.output
    assert engine.output.splitlines()[-1] == default.output.splitlines()[-1]
    bad = runner.invoke(app, route([video, "--tail", "torch"]))
    assert bad.exit_code == 2
    both = runner.invoke(app, route([video, "--tail", "engine", "--fp32"]))
    assert both.exit_code == 3
