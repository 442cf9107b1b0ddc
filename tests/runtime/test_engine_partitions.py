"""mdla-engine runs partitioned manifests (issue 17, docs/partitions.md section 4): each NPU
partition as its own Neuron model on its device (here the host emulator), each cpu partition
in-process with the engine's own kernels; the result is bit-exact with mdla_quant.run_int8, and
the report says per partition where it ran and how long it took."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_emu import build_emulator
from mdla_ir.builders import act, qp
from mdla_ir.graph import Graph, Op, Tensor
from mdla_ir.ops import OpKind
from mdla_ir.provenance import Provenance
from mdla_quant import run_int8
from mdla_quant.kernels.float_ops import gelu_table
from mdla_runtime import load, open_target, save
from mdla_runtime.build import engine_path
from mdla_runtime.engine.target import quantize
from mdla_runtime.testing import partitioned_qgraph
from tests.workbench.unmappable_models import ConvNeXtBlock

CPU = ["LAYER_NORM,GELU,FULLY_CONNECTED,TRANSPOSE"]
# The block's Linears and permutes kept (the channels-last rules skipped): the cpu partition
# then runs FULLY_CONNECTED and TRANSPOSE kernels of its own, which these tests are about.
KEEP_LINEARS = (
    "linear_last_axis_to_conv1x1",
    "drop_identity_transpose",
    "unit_axes_transpose_to_reshape",
)


def engine(path: Path, tmp: Path, xs: list[np.ndarray], *extra: str) -> tuple[int, str, str]:
    m = load(path)
    args = [str(engine_path()), str(path), "--outdir", str(tmp), *extra]
    for k, (x, spec) in enumerate(zip(xs, m.inputs, strict=True)):
        f = tmp / f"in{k}.bin"
        f.write_bytes(quantize(x, spec).tobytes())
        args += ["--input", str(f)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def outputs(path: Path, tmp: Path, want: list[np.ndarray]) -> list[np.ndarray]:
    return [
        np.fromfile(tmp / f"output_{k}.bin", np.int8).reshape(w.shape) for k, w in enumerate(want)
    ]


def placed_engine_is_bit_exact(
    placed: Graph, shape: tuple[int, ...], tmp: Path, name: str, seeds: int
) -> None:
    """Quantize a placed graph on 3 random calibration inputs of `shape`, save it, and hold the
    engine (the emulator as its adapter) to run_int8 bit for bit on `seeds` random inputs."""
    rng = np.random.default_rng(1)
    calib = [[rng.normal(size=shape).astype(np.float32)] for _ in range(3)]
    qgraph = mdla_quant.quantize(placed, calib)
    path = save(qgraph, tmp / f"{name}.mdla")
    lib = str(build_emulator())
    for seed in range(seeds):
        xs = [np.random.default_rng(seed).normal(size=s.model_shape).astype(np.float32)
              for s in load(path).inputs]  # fmt: skip
        code, out, err = engine(path, tmp, xs, "--lib", lib)
        assert code == 0, out + err
        want = run_int8(qgraph, xs, raw=True)
        for got, w in zip(outputs(path, tmp, want), want, strict=True):
            np.testing.assert_array_equal(got, w)


def real_gelu(graph: Graph) -> Graph:
    """partitioned_qgraph with GELU's real table (its own is a ramp, which run_int8 refuses)."""
    n, g = graph.tensors["n"].quant, graph.tensors["g"].quant
    assert n is not None
    assert g is not None
    table = gelu_table(
        np.float32(n.scale[0]), n.zero_point[0], np.float32(g.scale[0]), g.zero_point[0]
    )
    t = graph.tensors["t"]
    return graph.with_(tensors={**graph.tensors, "t": Tensor("t", t.shape, "int8", table, t.quant)})


def model_x(path: Path, seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s.model_shape).astype(np.float32) for s in load(path).inputs]


@pytest.fixture(scope="module")
def lib() -> str:
    return str(build_emulator())


def test_three_partitions_bit_exact_with_run_int8(tmp_path: Path, lib: str) -> None:
    graph = real_gelu(partitioned_qgraph())
    path = save(graph, tmp_path / "parts.mdla")
    xs = model_x(path)
    code, out, err = engine(path, tmp_path, xs, "--lib", lib, "--json", "--repeat", "3")
    assert code == 0, out + err
    report = json.loads(out)
    assert [(p["device"], p["ops"], p["first_op"]) for p in report["partitions"]] == [
        ("mtk-mdla", 1, 0),
        ("cpu", 2, 1),
        ("mtk-mdla", 1, 3),
    ]
    assert all(0 <= p["min_ms"] <= p["ms"] for p in report["partitions"])
    assert report["latency_ms"]["runs"] == 3
    assert report["latency_ms"]["min"] >= max(p["min_ms"] for p in report["partitions"])
    want = run_int8(graph, xs, raw=True)
    for got, w in zip(outputs(path, tmp_path, want), want, strict=True):
        np.testing.assert_array_equal(got, w)


def test_the_text_report_names_each_partition(tmp_path: Path, lib: str) -> None:
    path = save(real_gelu(partitioned_qgraph()), tmp_path / "parts.mdla")
    code, out, err = engine(path, tmp_path, model_x(path), "--lib", lib)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{path}: 3 partitions, 4/4 operations, 1 run(s)")
    assert lines[1].startswith("  partition 0 on mtk-mdla: 1 operations, median ")
    assert lines[2].startswith("  partition 1 on cpu: 2 operations, median ")
    assert lines[3].startswith("  partition 2 on mtk-mdla: 1 operations, median ")


def test_gelu_reads_the_manifest_table(tmp_path: Path, lib: str) -> None:
    """The engine computes no GELU itself: with the sample's identity ramp as the table (g and n
    share quantization), the file computes add(n, c), which run_int8 gives without the GELU."""
    ramp = partitioned_qgraph()
    assert ramp.tensors["g"].quant == ramp.tensors["n"].quant
    ops = tuple(op for op in ramp.ops if op.name != "gelu0")
    ops = tuple(op.with_(inputs=("n", "c")) if op.name == "add0" else op for op in ops)
    no_gelu = ramp.with_(ops=ops, provenance=Provenance(device="mtk-mdla", cpu_ops=("ln0",)))
    path = save(ramp, tmp_path / "ramp.mdla")
    xs = model_x(path)
    (want,) = run_int8(no_gelu, xs, raw=True)
    code, _, err = engine(path, tmp_path, xs, "--lib", lib)
    assert code == 0, err
    (got,) = outputs(path, tmp_path, [want])
    np.testing.assert_array_equal(got, want)
    code, _, err = engine(save(real_gelu(ramp), tmp_path / "gelu.mdla"), tmp_path, xs, "--lib", lib)
    assert code == 0, err
    (real,) = outputs(path, tmp_path, [want])
    assert not np.array_equal(real, want)  # the real table is not the ramp


def transpose_graph(shape: tuple[int, ...], perm: tuple[int, ...]) -> Graph:
    q = qp(0.07, -5)
    out_shape = tuple(shape[p] for p in perm)
    tensors = [act("x", shape, q), act("y", out_shape, q)]
    ops = (Op(OpKind.TRANSPOSE, "t0", ("x",), ("y",), {"perm": perm}),)
    prov = Provenance(device="mtk-mdla", cpu_ops=("t0",))
    return Graph("tr", {t.name: t for t in tensors}, ops, ("x",), ("y",), "NHWC", provenance=prov)


@pytest.mark.parametrize(
    ("shape", "perm"),
    [
        ((1, 3, 4, 5), (0, 2, 3, 1)),
        ((1, 3, 4, 5), (0, 3, 1, 2)),
        ((2, 3, 4, 5), (3, 2, 1, 0)),
        ((1, 7, 1, 6), (0, 1, 2, 3)),
        ((6, 5), (1, 0)),
        ((2, 3, 4), (1, 2, 0)),
    ],
)
def test_transpose_on_the_cpu_is_numpys(
    tmp_path: Path, shape: tuple[int, ...], perm: tuple[int, ...]
) -> None:
    """TRANSPOSE (emu/k_transpose.c) against mdla_quant's kernel (numpy's transpose); a
    manifest of one cpu partition needs no adapter at all (--lib names nothing)."""
    graph = transpose_graph(shape, perm)
    path = save(graph, tmp_path / "tr.mdla")
    rng = np.random.default_rng(len(shape) * 10 + perm[0])
    xs = [rng.normal(size=s.model_shape).astype(np.float32) for s in load(path).inputs]
    code, _out, err = engine(path, tmp_path, xs, "--lib", str(tmp_path / "no-adapter.so"))
    assert code == 0, err
    want = run_int8(graph, xs, raw=True)
    (got,) = outputs(path, tmp_path, want)
    np.testing.assert_array_equal(got, want[0])
    assert got.shape == tuple(shape[p] for p in perm)


@pytest.fixture(scope="module")
def block() -> tuple[mdla_ir.Graph, np.ndarray]:
    import torch

    torch.manual_seed(0)
    x = torch.zeros(1, 8, 8, 8)
    return mdla_ir.from_torch(ConvNeXtBlock().eval(), (x,), name="block"), x.numpy()


def placed_qgraph(graph: Graph, cpu: list[str]) -> Graph:
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", cpu, skip_rules=KEEP_LINEARS)
    rng = np.random.default_rng(1)
    calib = [[rng.uniform(-1, 1, (1, 8, 8, 8)).astype(np.float32)] for _ in range(2)]
    return mdla_quant.quantize(placed.graph, calib)


@pytest.mark.parametrize(
    ("cpu", "devices"),
    [
        (CPU, ["mtk-mdla", "cpu", "mtk-mdla"]),
        # the depthwise conv and the residual ADD on the cpu too: int8 kernels of the emulator
        ([*CPU, "DEPTHWISE_CONV_2D,ADD"], ["cpu"]),
        ([*CPU, "ADD"], ["mtk-mdla", "cpu"]),
    ],
)
def test_convnext_block_bit_exact(
    tmp_path: Path, lib: str, block: tuple[Graph, np.ndarray], cpu: list[str], devices: list[str]
) -> None:
    qgraph = placed_qgraph(block[0], cpu)
    path = save(qgraph, tmp_path / "block.mdla")
    assert [p.device for p in load(path).partitions] == devices
    rng = np.random.default_rng(7)
    for seed in range(2):
        xs = [rng.uniform(-1.5, 1.5, s.model_shape).astype(np.float32) for s in load(path).inputs]
        code, out, err = engine(path, tmp_path, xs, "--lib", lib, "--json")
        assert code == 0, out + err
        assert [p["device"] for p in json.loads(out)["partitions"]] == devices, seed
        want = run_int8(qgraph, xs, raw=True)
        for got, w in zip(outputs(path, tmp_path, want), want, strict=True):
            np.testing.assert_array_equal(got, w)


def test_the_target_carries_the_partitions(tmp_path: Path, block: tuple[Graph, np.ndarray]) -> None:
    qgraph = placed_qgraph(block[0], CPU)
    path = save(qgraph, tmp_path / "block.mdla")
    x = np.random.default_rng(2).uniform(-1, 1, (1, 8, 8, 8)).astype(np.float32)
    r = open_target("emu").run(path, [x], repeat=2)
    assert [(p.device, p.ops, p.first_op) for p in r.partitions] == [
        ("mtk-mdla", 1, 0),
        ("cpu", 6, 1),
        ("mtk-mdla", 1, 7),
    ]
    assert r.npu_partitions == (0, 2)
    assert r.device == "mtk-mdla+cpu"
    np.testing.assert_array_equal(r.raw_outputs[0], run_int8(qgraph, [x], raw=True)[0])


def failing(path: Path, tmp: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = engine(path, tmp, model_x(path), *extra, "--json")
    return code, json.loads(out)["error"]


def test_no_fallback_a_partition_device_the_adapter_lacks(tmp_path: Path, lib: str) -> None:
    header_graph = real_gelu(partitioned_qgraph())
    path = save(header_graph, tmp_path / "parts.mdla")
    blob = path.read_bytes().replace(b"mtk-mdla", b"mtk-nope")
    bad = tmp_path / "nope.mdla"
    bad.write_bytes(blob)
    code, err = failing(bad, tmp_path, "--lib", lib, "--device", "mtk-nope")
    assert code == 4
    assert err["message"].startswith("partition 0 is placed on `mtk-nope`; the adapter has no")


def test_device_option_must_agree(tmp_path: Path, lib: str) -> None:
    """(--ops and --cache on partitioned manifests: tests/runtime/test_partition_prefix.py.)"""
    path = save(real_gelu(partitioned_qgraph()), tmp_path / "parts.mdla")
    code, err = failing(path, tmp_path, "--lib", lib, "--device", "mtk-gpu")
    assert code == 2
    assert "partition 0 of" in err["message"]
    assert "placed on `mtk-mdla`" in err["message"]


def test_an_npu_partition_that_stops_mapping_names_its_op(
    tmp_path: Path, lib: str, block: tuple[Graph, np.ndarray]
) -> None:
    """No fallback inside a partition: `down` (FULLY_CONNECTED) left alone in a partition on
    the emulated mtk-dsp, which has no FULLY_CONNECTED, fails to compile naming it (exit 3)."""
    qgraph = placed_qgraph(block[0], CPU)
    cpu_ops = tuple(n for n in qgraph.provenance.cpu_ops if n != "down")
    prov = dataclasses.replace(qgraph.provenance, device="mtk-dsp", cpu_ops=cpu_ops)
    path = save(qgraph.with_(provenance=prov), tmp_path / "dsp.mdla")
    assert [p.device for p in load(path).partitions] == ["mtk-dsp", "cpu"] * 2 + ["mtk-dsp"]
    code, err = failing(path, tmp_path, "--lib", lib, "--device", "mtk-dsp")
    assert code == 3
    assert err["stage"] == "compile"
    assert err["op_name"] == "down"
    assert err["message"].startswith("partition 2: NeuronCompilation_")
    assert "the first it cannot run is operation 5 `down` (FULLY_CONNECTED)" in err["message"]


def test_supported_asks_each_npu_partition_on_its_device(tmp_path: Path, lib: str) -> None:
    path = save(real_gelu(partitioned_qgraph()), tmp_path / "parts.mdla")
    proc = subprocess.run(
        [str(engine_path()), str(path), "--lib", lib, "--supported", "--json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    parts = json.loads(proc.stdout)["partitions"]
    assert parts == [
        {"device": "mtk-mdla", "ops": [0], "supported": [True]},
        {"device": "cpu", "ops": [1, 2], "supported": None},
        {"device": "mtk-mdla", "ops": [3], "supported": [True]},
    ]
    assert open_target("emu").supported(path) == {"mtk-mdla": [True, True]}
    text = subprocess.run(
        [str(engine_path()), str(path), "--lib", lib, "--supported"], capture_output=True, text=True
    ).stdout.splitlines()
    assert text[0] == "partition 0 on mtk-mdla: 1/1 operations supported"
    assert text[2] == "partition 1 on cpu: 2 operations (the engine's own kernels)"


def argmax_graph(shape: tuple[int, ...], axis: int, keepdims: bool) -> Graph:
    out = tuple(1 if i == axis else d for i, d in enumerate(shape))
    if not keepdims:
        out = tuple(d for i, d in enumerate(shape) if i != axis)
    tensors = [act("x", shape, qp(0.1, 3)), act("y", out, qp(1.0, 0))]
    ops = (Op(OpKind.ARGMAX, "am", ("x",), ("y",), {"axis": axis, "keepdims": keepdims}),)
    prov = Provenance(device="mtk-mdla", cpu_ops=("am",))
    return Graph("am", {t.name: t for t in tensors}, ops, ("x",), ("y",), "NHWC", provenance=prov)


@pytest.mark.parametrize(
    ("shape", "axis", "keepdims"),
    [
        ((1, 4, 5, 6), 3, False),  # a class map: NHWC scores over the last axis
        ((1, 4, 5, 6), 3, True),
        ((1, 4, 5, 6), 1, False),
        ((2, 3, 7), 0, True),
        ((1, 128, 3), 1, False),  # the most classes an int8 holds
    ],
)
def test_argmax_on_the_cpu_is_the_references(
    tmp_path: Path, shape: tuple[int, ...], axis: int, keepdims: bool
) -> None:
    """ARGMAX (cpu_part.c) against mdla_quant's kernel, ties included: the inputs take 5
    levels, so most rows hold tied maxima and the first index must win, as numpy's does."""
    graph = argmax_graph(shape, axis, keepdims)
    path = save(graph, tmp_path / "am.mdla")
    rng = np.random.default_rng(sum(shape) + axis)
    xs = [(rng.integers(-2, 3, shape) * 0.1).astype(np.float32)]
    code, _, err = engine(path, tmp_path, xs, "--lib", str(tmp_path / "no-adapter.so"))
    assert code == 0, err
    (want,) = run_int8(graph, xs, raw=True)
    (got,) = outputs(path, tmp_path, [want])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.argmax(xs[0], axis=axis, keepdims=keepdims))


def test_segmentation_with_a_cpu_argmax_writes_the_class_map(tmp_path: Path, lib: str) -> None:
    """The class map comes out of the .mdla itself: an NPU partition of convs, then ARGMAX on
    the cpu; the engine's int8 output is the class index per pixel, run_int8's bit for bit."""
    from tests.workbench.argmax_models import argmax_segmenter

    module, x0 = argmax_segmenter()
    graph = mdla_ir.from_torch(module, (x0,), name="seg")
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", ["ARGMAX"])
    rng = np.random.default_rng(4)
    calib = [[rng.normal(size=(1, 3, 32, 32)).astype(np.float32)] for _ in range(2)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    path = save(qgraph, tmp_path / "seg.mdla")
    x = rng.normal(size=(1, 3, 32, 32)).astype(np.float32)
    r = open_target("emu").run(path, [x])
    assert [p.device for p in r.partitions] == ["mtk-mdla", "cpu"]
    (want,) = run_int8(qgraph, [x], raw=True)
    np.testing.assert_array_equal(r.raw_outputs[0], want)
    assert r.outputs[0].shape == (1, 32, 32)
    np.testing.assert_array_equal(r.outputs[0], want.astype(np.float32))  # scale 1, zp 0
    (f,) = mdla_ir.run_float(placed.graph, [x])
    assert np.mean(f == r.outputs[0]) > 0.9  # random weights: most pixels keep their class


def test_supported_of_a_manifest_all_on_the_cpu_needs_no_adapter(tmp_path: Path) -> None:
    path = save(transpose_graph((1, 3, 4, 5), (0, 2, 3, 1)), tmp_path / "tr.mdla")
    assert open_target("emu").supported(path) == {"mtk-mdla": []}
    proc = subprocess.run(
        [str(engine_path()), str(path), "--lib", str(tmp_path / "none.so"), "--supported"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "partition 0 on cpu: 1 operations (the engine's own kernels)\n"


def test_a_cpu_kernel_that_refuses_its_operands_names_the_op(tmp_path: Path) -> None:
    """The emulator's prepare runs on cpu partitions too: a RESHAPE whose output changes the
    quantization (which moves bytes unchanged) is refused at prepare, naming the op (exit 1)."""
    tensors = [act("x", (1, 4), qp(0.1, 0)), act("y", (2, 2), qp(0.2, 0))]
    ops = (Op(OpKind.RESHAPE, "r0", ("x",), ("y",), {"shape": (2, 2)}),)
    prov = Provenance(device="mtk-mdla", cpu_ops=("r0",))
    graph = Graph("r", {t.name: t for t in tensors}, ops, ("x",), ("y",), "NHWC", provenance=prov)
    path = save(graph, tmp_path / "r.mdla")
    code, err = failing(path, tmp_path, "--lib", str(tmp_path / "none.so"))
    assert code == 1
    assert err["stage"] == "cpu"
    assert err["op_name"] == "r0"
    assert err["message"] == (
        "partition 0 (cpu): operation 0 `r0`: RESHAPE: the kernel refuses the operation's "
        "operands (BAD_DATA)"
    )
