"""A client nobody here wrote: LiteRT's MediaTek compiler plugin, with the emulator as its adapter.

The wheel's AOT tool loads the plugin, which dlopens `libneuron_adapter.so` (the emulator through
a symlink), partitions the `.tflite` with NeuronCompilation_getSupportedOperations, compiles with
createWithOptions and stores the compiled network into the model's bytecode. That network is then
restored through the emulator as LiteRT's dispatch does and run on the same int8 inputs as LiteRT's
reference kernels (BUILTIN_REF) on the original `.tflite`: the outputs must agree bit for bit (and
with mdla_quant.run_int8). The Neuron calls the plugin made are recorded (MDLA_EMU_TRACE) and
checked in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_emu import build_emulator, load_emulator
from mdla_ir.ops import OpKind
from mdla_ir.schema import HOST_CODES, SCHEMA
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_quant.reference import quantize_inputs
from mdla_runtime.export.host_ops import HOST
from mdla_runtime.export.ops import emitter
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes
from tests.models import inputs_for, legalized
from tests.runtime.litert_plugin import (
    apply_plugin,
    bytecode_of,
    compiled_networks,
    dispatch_ops,
    litert_dir,
    neuron_version,
    run_restored,
)

pytest.importorskip("ai_edge_litert")
if not (litert_dir() / "tools" / "apply_plugin_main").exists():  # pragma: no cover
    pytest.skip("this ai-edge-litert wheel has no AOT tool", allow_module_level=True)


class Mixed(nn.Module):
    """Many op kinds in one small graph: stride-2 conv (PyTorch pads), hardswish, depthwise with
    ReLU6, SiLU, a squeeze-excite gate, a residual add, max and average pools, a concatenation,
    bilinear upsampling, tanh, and a Linear classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 2, 1)
        self.dw = nn.Conv2d(8, 8, 3, 1, 1, groups=8)
        self.pw = nn.Conv2d(8, 8, 1)
        self.se1, self.se2 = nn.Conv2d(8, 4, 1), nn.Conv2d(4, 8, 1)
        self.branch = nn.Conv2d(8, 8, 1)
        self.mix = nn.Conv2d(16, 8, 3, 1, 1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.hardswish(self.stem(x))
        y = nn.functional.relu6(self.dw(x))
        y = nn.functional.silu(self.pw(y))
        g = torch.sigmoid(self.se2(torch.relu(self.se1(y.mean((2, 3), keepdim=True)))))
        x = x + y * g
        a = nn.functional.max_pool2d(x, 2)
        b = nn.functional.avg_pool2d(torch.tanh(self.branch(x)), 2)
        z = nn.functional.interpolate(torch.cat([a, b], 1), scale_factor=2, mode="bilinear")
        z = torch.relu(self.mix(z))
        return self.fc(z.mean((2, 3)))  # type: ignore[no-any-return]


class EveryKind(Mixed):
    """Mixed, then a transposed conv (NNAPI's implicit form reaches the emulator), PReLU,
    nearest upsampling, a ReLU of its own and a softmax head: every op kind the `.tflite`
    exporter writes for an NPU partition that the plugin lowers and the MDLA maps (see
    test_the_every_kind_model_holds_each_kind_the_exporter_writes)."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.ConvTranspose2d(8, 8, 2, 2)
        self.prelu = nn.PReLU(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.hardswish(self.stem(x))
        y = nn.functional.relu6(self.dw(x))
        y = nn.functional.silu(self.pw(y))
        g = torch.sigmoid(self.se2(torch.relu(self.se1(y.mean((2, 3), keepdim=True)))))
        x = x + y * g
        a = nn.functional.max_pool2d(x, 2)
        b = nn.functional.avg_pool2d(torch.tanh(self.branch(x)), 2)
        z = nn.functional.interpolate(torch.cat([a, b], 1), scale_factor=2, mode="bilinear")
        z = torch.relu(self.mix(z))
        u = self.prelu(self.up(nn.functional.max_pool2d(z, 2)))
        n = torch.relu(nn.functional.interpolate(u, scale_factor=2))
        n = nn.functional.avg_pool2d(n, 2)
        return torch.softmax(self.fc((z + n).mean((2, 3))), -1)


def _mixed(name: str = "mixed") -> tuple[mdla_ir.Graph, list[list[np.ndarray[Any, Any]]]]:
    torch.manual_seed(0)
    module = (EveryKind() if name == "every_kind" else Mixed()).eval()
    graph = mdla_ir.from_torch(module, (torch.zeros(1, 3, 16, 16),), name=name)
    graph = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    rng = np.random.default_rng(0)
    xs = [[rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)] for _ in range(4)]
    return graph, xs


# The kinds the exporter writes as a CPU partition's (host_ops.HOST: TRANSPOSE, BATCH_MATMUL, ...)
HOST_KINDS = set(HOST_CODES) | set(HOST)


@pytest.fixture(scope="module")
def emulator() -> Path:
    return build_emulator()


@pytest.fixture(scope="module", params=["efficientnet_lite0", "mixed", "every_kind"])
def compiled(request: pytest.FixtureRequest, emulator: Path, tmp_path_factory: Any) -> Any:
    """(name, qgraph, original .tflite bytes, plugin run, test inputs)."""
    name = request.param
    if name in ("mixed", "every_kind"):
        graph, xs = _mixed(name)
        calibration, tests = xs[:2], xs[2:]
    else:
        graph, _ = legalized(name)
        calibration, tests = inputs_for(name, 2, 0), inputs_for(name, 2, 4)
    qgraph = quantize(graph, calibration, QuantConfig())
    tmp = tmp_path_factory.mktemp(name)
    model = tmp / f"{name}.tflite"
    model.write_bytes(tflite_bytes(qgraph))
    run = apply_plugin(model, tmp / f"{name}_mtk.tflite", emulator)
    assert run.returncode == 0, run.log[-3000:]
    return name, qgraph, model.read_bytes(), run, tests


def test_the_plugin_takes_every_op_into_one_partition(compiled: Any) -> None:
    _, qgraph, _, run, _ = compiled
    n = len(qgraph.ops)
    assert f"selected {n} ops, from a total of {n} ops. resulted in 1 partitions" in run.log
    ops = dispatch_ops(run.output.read_bytes())
    assert len(ops) == 1
    assert ops[0]["name"] == "Partition_0"


def test_the_every_kind_model_holds_each_kind_the_exporter_writes() -> None:
    """Each op kind the exporter writes that the emulator (the plugin's adapter) has a kernel
    for is in the every_kind model but
    DEPTH_TO_SPACE and a RELU6 of its own (the plugin lowers neither: it sends its placeholder,
    see the test below; RELU6 fused into a conv is here), SUB (no MDLA maps it) and
    FULLY_CONNECTED (legalize makes it a 1x1 CONV_2D for the MDLA, silicon fact 3) and
    QUANTIZE (its only kernel is the int8 <-> int16 requantization of a 16x8 graph; this model
    is int8); the exporter's host ops are a CPU partition's."""
    graph, _ = _mixed("every_kind")
    exported = {k for k in OpKind if emitter(k) is not None and k not in HOST_KINDS}
    exported = {k for k in exported if SCHEMA[k].emu}  # an NPU kernel (not a CPU-only kind)
    left_out = {OpKind.DEPTH_TO_SPACE, OpKind.RELU6, OpKind.SUB, OpKind.FULLY_CONNECTED}
    left_out |= {OpKind.QUANTIZE}
    assert {op.kind for op in graph.ops} == exported - left_out


def test_the_compiled_network_is_the_emulators_own(compiled: Any) -> None:
    _, _, _, run, _ = compiled
    blob = run.output.read_bytes()
    bytecode = bytecode_of(blob, dispatch_ops(blob)[0])
    assert neuron_version(bytecode) == (8, 2, 24)  # what Neuron_getVersion says
    (network,) = compiled_networks(bytecode)
    assert network.entry_point == "Partition_0"
    assert network.kind == "AdapterCache"  # silicon fact 10: an adapter cache blob, not a .dla
    assert network.data[:8] == b"MDLAEMUC"


def test_restored_network_is_bit_exact_with_litert_reference(compiled: Any) -> None:
    _, qgraph, original, run, tests = compiled
    blob = run.output.read_bytes()
    (network,) = compiled_networks(bytecode_of(blob, dispatch_ops(blob)[0]))
    lib = load_emulator()
    for xs in tests:
        device_in = quantize_inputs(qgraph, xs)
        ins = [device_in[n] for n in qgraph.inputs]
        theirs = run_tflite_reference(original, ins)
        ours = run_restored(lib, network.data, ins)
        numpy_ref = run_int8(qgraph, xs, raw=True)
        for a, b, c in zip(ours, theirs, numpy_ref, strict=True):
            assert a.size == b.size == c.size
            assert int(np.count_nonzero(a != b.ravel())) == 0
            assert int(np.count_nonzero(a != c.ravel())) == 0


def _subsequence(trace: list[str], wanted: list[str]) -> bool:
    it = iter(trace)
    return all(any(line == w for line in it) for w in wanted)


def test_the_plugins_neuron_calls_in_order(compiled: Any) -> None:
    _, qgraph, _, run, _ = compiled
    names = [line.split(" ", 1)[0] for line in run.trace]
    # partition: the version gates the query (>= 8.2.24), asked on an unfinished compilation
    partition = [
        "Neuron_getVersion",
        "NeuronModel_create",
        "NeuronModel_setName",
        "NeuronModel_identifyInputsAndOutputs",
        "NeuronModel_finish",
        "NeuronModel_relaxComputationFloat32toFloat16 1",
        "NeuronCompilation_createWithOptions --opt-accuracy --opt 3",
        "NeuronCompilation_setPriority 110",
        "NeuronCompilation_setPreference 2",
        "NeuronCompilation_setOptimizationHint 0",
        "NeuronCompilation_setOptimizationString --opt-accuracy --opt 3",
        "NeuronCompilation_getSupportedOperations",
        "NeuronCompilation_free",
        "NeuronModel_free",
    ]
    compile_ = [
        *partition[:-3],
        "NeuronCompilation_finish",
        "NeuronCompilation_getCompiledNetworkSize",
        "NeuronCompilation_storeCompiledNetwork",
        "NeuronCompilation_free",
        "NeuronModel_free",
    ]
    assert _subsequence(run.trace, partition + compile_), run.trace
    query = names.index("NeuronCompilation_getSupportedOperations")
    assert "NeuronCompilation_finish" not in names[:query]
    # the model the plugin built: one Neuron operation per op of ours, twice (query, compile)
    assert names.count("NeuronModel_addOperation") == 2 * len(qgraph.ops)
    assert "NeuronModel_getSupportedOperationsForDevices" not in names


def test_an_op_the_plugin_cannot_lower_reaches_the_query_as_its_placeholder(
    emulator: Path, tmp_path: Path
) -> None:
    """The plugin has no lowering for DEPTH_TO_SPACE: its query model carries LiteRT's placeholder
    NEURON_UNKNOWN (10001) there, the emulator answers false for it only, and the convolution
    before it becomes the one partition, whose network runs bit-exact with run_int8 of the
    graph cut before DEPTH_TO_SPACE."""
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU(), nn.PixelShuffle(2)).eval()
    graph = mdla_ir.from_torch(module, (torch.zeros(1, 3, 8, 8),), name="shuffle")
    graph = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    rng = np.random.default_rng(0)
    xs = [[rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)] for _ in range(3)]
    qgraph = quantize(graph, xs[:2], QuantConfig())
    assert [op.kind.name for op in qgraph.ops] == ["CONV_2D", "DEPTH_TO_SPACE"]
    model = tmp_path / "shuffle.tflite"
    model.write_bytes(tflite_bytes(qgraph))
    run = apply_plugin(model, tmp_path / "shuffle_mtk.tflite", emulator)
    assert run.returncode == 0, run.log[-3000:]
    assert "selected 1 ops, from a total of 2 ops. resulted in 1 partitions" in run.log
    query = run.trace[: run.trace.index("NeuronCompilation_getSupportedOperations") + 1]
    compile_ = run.trace[len(query) :]
    assert [line for line in query if line.startswith("NeuronModel_addOperation")] == [
        "NeuronModel_addOperation 3",
        "NeuronModel_addOperation 10001",
    ]
    assert [line for line in compile_ if line.startswith("NeuronModel_addOperation")] == [
        "NeuronModel_addOperation 3"
    ]
    blob = run.output.read_bytes()
    (network,) = compiled_networks(bytecode_of(blob, dispatch_ops(blob)[0]))
    ins = [quantize_inputs(qgraph, xs[2])[n] for n in qgraph.inputs]
    (ours,) = run_restored(load_emulator(), network.data, ins)
    (head,) = run_int8(mdla_legalize.prefix(qgraph, 1), xs[2], raw=True)
    assert ours.size == head.size == 8 * 8 * 8
    assert int(np.count_nonzero(ours != head.ravel())) == 0
