"""Portability: mdla-engine, the host emulator and the fake adapter cross-built for aarch64 with
Debian's gcc-aarch64-linux-gnu and run under qemu-aarch64: the engine checks a manifest and runs
a model, on the emulator bit-exact with mdla_quant.run_int8."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mdla_quant import run_int8
from mdla_runtime import load, save
from mdla_runtime.engine.target import quantize
from mdla_runtime.testing import chain_qgraph
from tests.runtime.cross import QEMU, SYSROOT, build_arm

FAKE = Path(__file__).parent / "fake_adapter.c"


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_arm(tmp_path_factory.mktemp("aarch64"), FAKE)


def qemu(arm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [QEMU, "-L", SYSROOT, str(arm / "mdla-engine"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_aarch64_engine_checks_a_manifest(arm: Path, tmp_path: Path) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    proc = qemu(arm, str(path), "--check", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["manifest"]["operations"] == 4
    assert out["manifest"]["name"] == "chain"
    assert "--cache" in qemu(arm, "--help").stdout


def test_aarch64_engine_runs_a_model(arm: Path, tmp_path: Path) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    x = tmp_path / "x.bin"
    x.write_bytes(np.full(108, 9, np.int8).tobytes())
    args = [str(path), "--lib", str(arm / "libfake.so"), "--input", str(x)]
    proc = qemu(arm, *args, "--outdir", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["devices"] == ["mtk-mdla", "mtk-gpu", "mtk-dsp"]
    assert [o["dims"] for o in out["outputs"]] == [[1, 3, 3, 4]]
    assert (np.fromfile(tmp_path / "output_0.bin", np.int8) == 10).all()


def test_aarch64_emulator_runs_a_model_bit_exact(arm: Path, tmp_path: Path) -> None:
    graph = chain_qgraph()
    path = save(graph, tmp_path / "chain.mdla")
    (spec,) = load(path).inputs
    x = np.random.default_rng(3).normal(size=spec.model_shape).astype(np.float32)
    (tmp_path / "x.bin").write_bytes(quantize(x, spec).tobytes())
    args = [str(path), "--lib", str(arm / "libneuron_emu.so"), "--input", str(tmp_path / "x.bin")]
    proc = qemu(arm, *args, "--outdir", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["selected"] == "mtk-mdla"
    (want,) = run_int8(graph, [x], raw=True)
    got = np.fromfile(tmp_path / "output_0.bin", np.int8).reshape(want.shape)
    np.testing.assert_array_equal(got, want)


def test_aarch64_engine_runs_partitions_bit_exact(arm: Path, tmp_path: Path) -> None:
    """The partition runner on aarch64: NPU partitions on the emulator, the cpu partition
    (LAYER_NORM in float32, GELU's table) with the engine's own kernels, as run_int8."""
    from mdla_ir.graph import Tensor
    from mdla_quant.kernels.float_ops import gelu_table
    from mdla_runtime.testing import partitioned_qgraph

    graph = partitioned_qgraph()
    n, g, t = graph.tensors["n"].quant, graph.tensors["g"].quant, graph.tensors["t"]
    assert n is not None
    assert g is not None
    table = gelu_table(
        np.float32(n.scale[0]), n.zero_point[0], np.float32(g.scale[0]), g.zero_point[0]
    )
    graph = graph.with_(
        tensors={**graph.tensors, "t": Tensor("t", t.shape, "int8", table, t.quant)}
    )
    path = save(graph, tmp_path / "parts.mdla")
    (spec,) = load(path).inputs
    x = np.random.default_rng(5).normal(size=spec.model_shape).astype(np.float32)
    (tmp_path / "x.bin").write_bytes(quantize(x, spec).tobytes())
    args = [str(path), "--lib", str(arm / "libneuron_emu.so"), "--input", str(tmp_path / "x.bin")]
    proc = qemu(arm, *args, "--outdir", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    parts = json.loads(proc.stdout)["partitions"]
    assert [p["device"] for p in parts] == ["mtk-mdla", "cpu", "mtk-mdla"]
    (want,) = run_int8(graph, [x], raw=True)
    got = np.fromfile(tmp_path / "output_0.bin", np.int8).reshape(want.shape)
    np.testing.assert_array_equal(got, want)


def test_aarch64_engine_runs_a_float_region_bit_exact(arm: Path, tmp_path: Path) -> None:
    """A float32 cpu partition on aarch64 (DEQUANTIZE, a bidirectional GRU, FULLY_CONNECTED_F32:
    cpu/gru.c) writes the float32 output run_int8 computes, bit for bit."""
    from mdla_runtime.testing_float import float_region_qgraph

    graph = float_region_qgraph()
    path = save(graph, tmp_path / "gru.mdla")
    (spec,) = load(path).inputs
    x = np.random.default_rng(6).normal(size=spec.model_shape).astype(np.float32)
    (tmp_path / "x.bin").write_bytes(quantize(x, spec).tobytes())
    args = [str(path), "--lib", str(arm / "libneuron_emu.so"), "--input", str(tmp_path / "x.bin")]
    proc = qemu(arm, *args, "--outdir", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [p["device"] for p in json.loads(proc.stdout)["partitions"]] == ["mtk-mdla", "cpu"]
    (want,) = run_int8(graph, [x], raw=True)
    got = np.fromfile(tmp_path / "output_0.bin", "<f4").reshape(want.shape)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
