"""Python targets: open_target specs, the I/O contract (quantize, layouts, dequantize), errors
carrying the Neuron result and op, and, on the host emulator, raw outputs equal to
mdla_quant.run_int8(raw=True) bit for bit for every op kind of the qgraph convention."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdla_ir.affine import quantize_input
from mdla_ir.builders import as_floats, random_codes, random_qgraph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_runtime import TargetError, load, open_target, save
from mdla_runtime.build import CSRC, compile_c
from mdla_runtime.engine.target import dequantize, quantize
from mdla_runtime.testing import chain_qgraph

FAKE = Path(__file__).parent / "fake_adapter.c"
KINDS = [
    OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED, OpKind.AVERAGE_POOL_2D,
    OpKind.MAX_POOL_2D, OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.RELU, OpKind.RELU6,
    OpKind.LOGISTIC, OpKind.TANH, OpKind.HARD_SWISH, OpKind.SOFTMAX, OpKind.CONCATENATION,
    OpKind.PAD, OpKind.RESHAPE, OpKind.MEAN, OpKind.RESIZE_BILINEAR,
]  # fmt: skip
DEVICES = ["mtk-mdla", "mtk-gpu", "mtk-dsp"]


def fake_target() -> object:
    lib = compile_c([FAKE], "libfake_neuron.so", shared=True, flags=(f"-I{CSRC}",))
    return open_target(f"lib:{lib}")


def test_lib_target_lists_devices() -> None:
    assert fake_target().devices() == DEVICES  # type: ignore[attr-defined]


def test_run_applies_the_io_contract(tmp_path: Path) -> None:
    graph = chain_qgraph()
    m = load(save(graph, tmp_path / "chain.mdla"))
    x = np.random.default_rng(0).normal(size=(1, 3, 6, 6)).astype(np.float32)  # NCHW model input
    result = fake_target().run(m, [x], repeat=3)  # type: ignore[attr-defined]
    (spec,) = m.inputs
    q = quantize(x, spec)
    assert q.shape == (1, 6, 6, 3)  # device layout NHWC
    want = quantize_input(x.transpose(0, 2, 3, 1), np.float32(spec.scale), spec.zero_point)
    np.testing.assert_array_equal(q, want)
    (raw,) = result.raw_outputs
    assert raw.shape == (1, 3, 3, 4)
    assert raw.dtype == np.int8
    flat = q.reshape(-1)
    np.testing.assert_array_equal(  # the fake: output byte i = input byte (i mod n) + 1
        raw.reshape(-1),
        (flat[np.arange(raw.size) % flat.size].astype(np.int16) + 1).astype(np.int8),
    )
    out = m.outputs[0]
    np.testing.assert_array_equal(
        result.outputs[0], out.scale * (raw.astype(np.float32) - out.zero_point)
    )
    assert result.device == "mtk-mdla"
    assert result.output_names == ("p",)
    assert 0 <= result.latency_ms[1] <= result.latency_ms[0]


def test_dequantize_undoes_the_boundary_permutation() -> None:
    from mdla_runtime.format.manifest import IOSpec

    spec = IOSpec(0, "y", 0.5, 2, "NHWC", (1, 2, 3, 4), (0, 2, 3, 1), (1, 4, 2, 3))
    raw = np.arange(24, dtype=np.int8).reshape(1, 2, 3, 4)
    got = dequantize(raw, spec, spec.scale, spec.zero_point)
    assert got.shape == (1, 4, 2, 3)
    np.testing.assert_array_equal(got, (0.5 * (raw.astype(np.float32) - 2)).transpose(0, 3, 1, 2))


def test_target_error_carries_result_and_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NEURON_UNSUPPORTED", str(OpKind.ADD.value))
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    x = np.zeros((1, 3, 6, 6), np.float32)
    target = fake_target()
    with pytest.raises(TargetError, match="UNMAPPABLE") as info:
        target.run(path, [x])  # type: ignore[attr-defined]
    assert info.value.result == "UNMAPPABLE"
    assert info.value.exit_code == 3
    assert target.run(path, [x], ops=2).output_names == ("c", "r")  # type: ignore[attr-defined]
    assert target.supported(path, ["mtk-gpu"]) == {"mtk-gpu": [True] * 4}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("ssh://pi@no-such-host.invalid:8022", "cannot reach no-such-host.invalid over SSH"),
        ("ssh://pi@phone?colour=red", "unknown option"),
        ("lib:/nonexistent/libneuron_adapter.so", "no such library"),
        ("tpu", "unknown target"),
    ],
)
def test_bad_specs(spec: str, needle: str) -> None:
    with pytest.raises(TargetError, match=needle):
        open_target(spec)


def test_wrong_input_count_and_shape(tmp_path: Path) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    target = fake_target()
    with pytest.raises(TargetError, match="takes 1 input"):
        target.run(path, [])  # type: ignore[attr-defined]
    with pytest.raises(TargetError, match=r"model wants \(1, 3, 6, 6\)"):
        target.run(path, [np.zeros((1, 6, 6, 3), np.float32)])  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def emu() -> object:
    return open_target("emu")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@pytest.mark.parametrize("seed", range(3))
def test_emulator_is_bit_exact_with_run_int8(tmp_path: Path, emu: object, kind: OpKind,
                                             seed: int) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    graph = random_qgraph(kind, rng)
    xs = as_floats(graph, random_codes(graph, rng))
    path = save(graph, tmp_path / "g.mdla")
    support = emu.supported(path, DEVICES)  # type: ignore[attr-defined]
    device = next(d for d in DEVICES if all(support[d]))  # MDLA rejects e.g. SUB: use another
    result = emu.run(path, xs, devices=(device,))  # type: ignore[attr-defined]
    for got, want in zip(result.raw_outputs, run_int8(graph, xs, raw=True), strict=True):
        np.testing.assert_array_equal(got, want)


def test_emulator_runs_a_chain_on_mdla_with_cuts(tmp_path: Path, emu: object) -> None:
    graph = chain_qgraph()
    path = save(graph, tmp_path / "chain.mdla")
    x = np.random.default_rng(1).normal(size=(1, 3, 6, 6)).astype(np.float32)
    result = emu.run(path, [x])  # type: ignore[attr-defined]
    np.testing.assert_array_equal(result.raw_outputs[0], run_int8(graph, [x], raw=True)[0])
    np.testing.assert_array_equal(result.outputs[0], run_int8(graph, [x])[0])
    assert emu.supported(path, ["mtk-mdla"]) == {"mtk-mdla": [True] * 4}  # type: ignore[attr-defined]
    cut = emu.run(path, [x], ops=2)  # type: ignore[attr-defined]
    assert cut.output_names == ("c", "r")
    np.testing.assert_array_equal(cut.raw_outputs[1], np.maximum(cut.raw_outputs[0], -10))


def _classifier() -> tuple[object, object]:
    """An un-legalized classifier head: MEAN (global pool), then FC 1280->1000 per-channel."""
    from mdla_ir.builders import act, const, qp
    from mdla_ir.graph import Graph, Op

    rng = np.random.default_rng(4)
    ws = rng.uniform(0.001, 0.01, 1000).astype(np.float32)
    tensors = [
        act("x", (1, 7, 7, 1280), qp(0.05, -3)),
        act("f", (1, 1280), qp(0.05, -3)),
        const("w", rng.integers(-127, 128, (1000, 1280)).astype(np.int8), qp(ws, 0, 0)),
        const("b", np.zeros(1000, np.int32), qp(ws * np.float32(0.05), 0, 0)),
        act("y", (1, 1000), qp(0.5, 0)),
    ]
    ops = (
        Op(OpKind.MEAN, "features.pool", ("x",), ("f",), {"axes": (1, 2), "keepdims": False}),
        Op(OpKind.FULLY_CONNECTED, "classifier.1", ("f", "w", "b"), ("y",), {"fuse": "NONE"}),
    )
    graph = Graph("head", {t.name: t for t in tensors}, ops, ("x",), ("y",), layout="NHWC")
    return graph, np.zeros((1, 7, 7, 1280), np.float32)


def test_emulator_rejects_a_real_classifier_and_bisection_finds_it(
    tmp_path: Path, emu: object
) -> None:
    graph, x = _classifier()
    path = save(graph, tmp_path / "head.mdla")  # type: ignore[arg-type]
    with pytest.raises(TargetError) as info:
        emu.run(path, [x])  # type: ignore[attr-defined]
    assert info.value.result == "UNMAPPABLE"
    assert info.value.exit_code == 3
    assert (info.value.op_index, info.value.op_name) == (1, "classifier.1")
    assert emu.bisect(path) == 1  # type: ignore[attr-defined]
    assert emu.bisect(path, ["mtk-gpu"]) is None  # type: ignore[attr-defined]


def test_bisect_on_the_fake_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    target = fake_target()
    for kind, index in ((OpKind.CONV_2D, 0), (OpKind.ADD, 2), (OpKind.MAX_POOL_2D, 3)):
        monkeypatch.setenv("FAKE_NEURON_UNSUPPORTED", str(kind.value))
        assert target.bisect(path) == index  # type: ignore[attr-defined]
    monkeypatch.delenv("FAKE_NEURON_UNSUPPORTED")
    assert target.bisect(path) is None  # type: ignore[attr-defined]
