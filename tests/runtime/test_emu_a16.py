"""The emulator's 16x8 kernels (int16 activations, QuantConfig.a16) agree with run_int8 byte for
byte: each product-code case (`mdla_quant.a16_cases`) gets an int8 tail (a RESHAPE) so its
int16 result leaves through a QUANTIZE int16 -> int8, as the .mdla's I/O is int8. The emulator
is the shipped one (mdla3.5, whose QUANTIZE maps its int8 <-> int16 form, assumed); a windowed
case is placed for it first (its arbitrary pads become the legalizer's PAD, or the op runs on the
CPU: `--cpu auto`), and SUB and TRANSPOSE, which mdla3.5 does not map, run on the CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_emu import build_emulator
from mdla_ir import Graph, OpKind
from mdla_ir.partitions import partitions
from mdla_ir.testing import GraphBuilder
from mdla_legalize import place
from mdla_quant import run_int8
from mdla_quant.a16_cases import BUILDERS
from mdla_quant.config import QuantConfig
from mdla_quant.quantize import quantize
from mdla_runtime import save
from mdla_runtime.engine.target import Target, open_target
from mdla_target import load_target, target_path
from tests.runtime.test_emu_support import DEVICES, NO_ERROR, NeuronModelBuilder

# the ops whose 16x8 kernel the emulator has (every one run_int8 has)
EMU_16X8 = (
    OpKind.RESHAPE,
    OpKind.ADD,
    OpKind.SUB,
    OpKind.CONV_2D,
    OpKind.DEPTHWISE_CONV_2D,
    OpKind.FULLY_CONNECTED,
    OpKind.CONCATENATION,
    OpKind.MUL,
    OpKind.LOGISTIC,
    OpKind.TANH,
    OpKind.SOFTMAX,
    OpKind.MEAN,
    OpKind.AVERAGE_POOL_2D,
    OpKind.MAX_POOL_2D,
    OpKind.PAD,
    OpKind.TRANSPOSE,
    OpKind.RESIZE_NEAREST_NEIGHBOR,
    OpKind.RESIZE_BILINEAR,
    OpKind.PRELU,
)
# mdla3.5 maps no SUB or TRANSPOSE: the case places the op on the CPU (`--cpu KIND`)
ON_CPU = (OpKind.SUB, OpKind.TRANSPOSE)
SEEDS = range(6)
WINDOWED = (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.AVERAGE_POOL_2D, OpKind.MAX_POOL_2D)


@pytest.fixture(scope="module")
def emu() -> Target:
    """The shipped emulator (mdla3.5)."""
    return open_target("emu")


def tailed_case(kind: OpKind, seed: int) -> tuple[Graph, tuple[str, ...], list[list[Any]]]:
    """a16_case's graph with an int8 RESHAPE after the int16 op (the graph output)."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(f"emu_a16_{kind.name.lower()}", layout="NHWC", seed=seed)
    y = BUILDERS[kind](b, rng, b.input("x", (1, 7, 7, 4)))
    size = int(np.prod(b.tensors[y].shape))
    graph = b.build(b.op(OpKind.RESHAPE, [y], name="tail", shape=(1, size)))
    mdla = load_target("mdla3.5")
    if kind in WINDOWED:  # arbitrary pads: the legalizer's PAD in front, else on the CPU
        graph = place(graph, mdla, "mtk-mdla", ["auto"]).graph
    if kind in ON_CPU:
        keep = ("sub_to_add_negated",)  # SUB stays SUB
        graph = place(graph, mdla, "mtk-mdla", [kind.name], keep).graph
    inputs = graph.inputs
    samples = [
        [rng.uniform(-1 - k, 1 + k, graph.tensors[n].shape).astype(np.float32) for n in inputs]
        for k in range(4)
    ]
    return graph, (y,), samples


def emulated_equals_run_int8(
    target: Target, qgraph: Graph, samples: list[list[Any]], tmp: Path
) -> int:
    """Run each sample on the emulator and through run_int8; every output byte equal. Returns
    the number of output elements compared."""
    path = save(qgraph, tmp / f"{qgraph.name}.mdla")
    compared = 0
    for sample in samples:
        ours: dict[str, Any] = {}
        run_int8(qgraph, sample, raw=True, observe=ours.__setitem__)
        result = target.run(path, sample)
        for name, got in zip(qgraph.outputs, result.raw_outputs, strict=True):
            want = ours[name]
            assert got.dtype == np.int8
            np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=name)
            compared += want.size
    return compared


@pytest.mark.parametrize("kind", EMU_16X8, ids=lambda k: k.name)
def test_the_emulators_16x8_kernel_equals_run_int8(
    kind: OpKind, emu: Target, tmp_path: Path
) -> None:
    compared = 0
    for seed in SEEDS:
        graph, a16, samples = tailed_case(kind, seed)
        qgraph = quantize(graph, samples, QuantConfig(a16=a16, method="minmax"))
        assert qgraph.tensors[a16[0]].dtype == "int16"
        kinds = [(op.kind, qgraph.tensors[op.inputs[0]].dtype) for op in qgraph.ops]
        assert (OpKind.QUANTIZE, "int8") in kinds
        assert (OpKind.QUANTIZE, "int16") in kinds
        compared += emulated_equals_run_int8(emu, qgraph, samples, tmp_path)
    assert compared >= 4 * len(SEEDS) * 4  # 4 samples of at least 4 elements


QUANT16_SYMM = 7


@pytest.mark.parametrize(
    ("kind", "supported"), [(OpKind.ADD, True), (OpKind.MUL, True), (OpKind.SUB, False)]
)
def test_int16_operands_map_only_where_a_16x8_kernel_is(kind: OpKind, supported: bool) -> None:
    """SUB has the 16x8 kernel ADD has, but no device of mdla3.5 gives SUB an int16 form (its
    entries have no `int16 = true`): an int16 SUB is a valid model the emulator does not map."""
    b = NeuronModelBuilder()
    try:
        x1 = b.operand(QUANT16_SYMM, (1, 4, 4, 8), 0.01, 0)
        x2 = b.operand(QUANT16_SYMM, (1, 4, 4, 8), 0.02, 0)
        y = b.operand(QUANT16_SYMM, (1, 4, 4, 8), 0.03, 0)
        assert b.operation(kind.value, [x1, x2, b.i32(0)], [y]) == NO_ERROR
        assert b.identify([x1, x2], [y]) == NO_ERROR
        assert b.finish() == NO_ERROR
        assert b.supported(["mtk-mdla"]) == [supported]
        assert b.supported(list(DEVICES)) == [supported]
    finally:
        b.free()


MAPPED = 'int16 = true\nint16_source = "assumed: the int8 <-> int16 requantization'
UNMAPPED = 'int16 = false\nint16_source = "a test target: a phone measured it does not map'


@pytest.fixture(scope="module")
def requantize_unmapped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Target]:
    """mdla3.5 as a phone that measured QUANTIZE's int8 <-> int16 form not to map would say,
    and the emulator built for it."""
    text = target_path("mdla3.5").read_text(encoding="utf-8")
    assert text.count(MAPPED) == 1
    path = tmp_path_factory.mktemp("target") / "mdla3.5-no-requantize.toml"
    path.write_text(text.replace(MAPPED, UNMAPPED), encoding="utf-8")
    return path, open_target(f"lib:{build_emulator(str(path))}")


@pytest.mark.parametrize("kind", [OpKind.ADD, OpKind.CONV_2D], ids=lambda k: k.name)
def test_a_requantization_the_target_does_not_map_runs_on_the_cpu(
    kind: OpKind, requantize_unmapped: tuple[Path, Target], emu: Target, tmp_path: Path
) -> None:
    path, target = requantize_unmapped
    graph, a16, samples = tailed_case(kind, 0)
    config = QuantConfig(a16=a16, method="minmax", target=str(path))
    qgraph = quantize(graph, samples, config)
    requant = [op.name for op in qgraph.ops if op.kind is OpKind.QUANTIZE]
    assert len(requant) >= 2
    assert qgraph.provenance.cpu_ops == tuple(requant)
    assert sum(p.on_cpu for p in partitions(qgraph)) == 2  # into the op, and out of it
    assert emulated_equals_run_int8(target, qgraph, samples, tmp_path) >= len(samples)
    plain = quantize(graph, samples, QuantConfig(a16=a16, method="minmax"))
    assert plain.provenance.cpu_ops == ()  # the shipped target maps them (assumed)
    assert emulated_equals_run_int8(emu, plain, samples, tmp_path) >= len(samples)


QUANT8_ASYMM_SIGNED = 14


@pytest.mark.parametrize(("devices", "maps"), [(["mtk-mdla"], True), (["mtk-gpu"], False)])
def test_quantize_maps_only_its_int16_form_where_the_target_says(
    devices: list[str], maps: bool
) -> None:
    """mdla3.5's QUANTIZE maps its int8 -> int16 form on mtk-mdla (int16 = true, assumed) though
    the entry says `supported = false` (the float <-> int8 boundary); mtk-gpu has no entry."""
    b = NeuronModelBuilder()
    try:
        x = b.operand(QUANT8_ASYMM_SIGNED, (1, 4, 4, 8), 0.02, 3)
        y = b.operand(QUANT16_SYMM, (1, 4, 4, 8), 0.001, 0)
        assert b.operation(OpKind.QUANTIZE.value, [x], [y]) == NO_ERROR
        assert b.identify([x], [y]) == NO_ERROR
        assert b.finish() == NO_ERROR
        assert b.supported(devices) == [maps]
    finally:
        b.free()


@pytest.mark.parametrize("channels", [40, 100])
def test_a_deep_16x8_conv_sums_its_tap_blocks_exactly(
    channels: int, emu: Target, tmp_path: Path
) -> None:
    """3x3 x `channels` taps: 360 and 900, over the GEMM's 256-tap int32 blocks (conv16.c)."""
    rng = np.random.default_rng(channels)
    b = GraphBuilder(f"emu_a16_deep{channels}", layout="NHWC", seed=channels)
    x = b.input("x", (1, 9, 9, channels))
    w = b.const("w", (7, 3, 3, channels))
    y = b.op(
        OpKind.CONV_2D, [x, w, b.const("bias", (7,))], name="y", stride=(1, 1), padding=(1, 1, 1, 1)
    )
    graph = b.build(b.op(OpKind.RESHAPE, [y], name="tail", shape=(1, 81 * 7)))
    graph = place(graph, load_target("mdla3.5"), "mtk-mdla", ["auto"]).graph
    samples = [[rng.uniform(-3, 3, (1, 9, 9, channels)).astype(np.float32)] for _ in range(3)]
    qgraph = quantize(graph, samples, QuantConfig(a16=("y",), method="minmax"))
    assert emulated_equals_run_int8(emu, qgraph, samples, tmp_path) == 3 * 81 * 7
