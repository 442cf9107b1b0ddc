"""Every model of the earlier issues through the whole path: legalize -> quantize -> save ->
mdla-engine on the host emulator. Raw outputs equal mdla_quant.run_int8(raw=True) bit for bit,
the MDLA reports N/N ops supported, and an un-legalized classifier fails with UNMAPPABLE naming
the op that --ops bisection finds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mdla_ir
import mdla_legalize
from mdla_ir import OpKind
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_runtime import TargetError, load, open_target, save
from tests.models import MODELS, inputs_for, legalized


@pytest.fixture(scope="module")
def emu() -> object:
    return open_target("emu")


@pytest.mark.parametrize("spec", MODELS)
def test_model_on_the_emulator_is_bit_exact(spec: str, emu: object, tmp_path: Path) -> None:
    graph, _ = legalized(spec)
    qgraph = quantize(graph, inputs_for(spec, 2, 0), QuantConfig())
    manifest = load(save(qgraph, tmp_path / f"{spec}.mdla"))
    support = emu.supported(manifest)  # type: ignore[attr-defined]
    assert support == {"mtk-mdla": [True] * len(qgraph.ops)}
    (xs,) = inputs_for(spec, 1, 5)
    result = emu.run(manifest, xs)  # type: ignore[attr-defined]
    for got, want in zip(result.raw_outputs, run_int8(qgraph, xs, raw=True), strict=True):
        np.testing.assert_array_equal(got.reshape(want.shape), want)
    assert result.device == "mtk-mdla"


def test_unlegalized_classifier_is_unmappable_and_bisection_finds_it(
    emu: object, tmp_path: Path
) -> None:
    """squeezenet's features + a real FULLY_CONNECTED head (1000 -> 1000, per-channel weights),
    kept as FC instead of the 1x1-conv rewrite: the MDLA rejects it, with no CPU fallback."""
    graph, _ = legalized("squeezenet1_1")
    rng = np.random.default_rng(0)
    features = graph.outputs[0]
    w = graph.with_(
        tensors={
            **graph.tensors,
            "fc.w": mdla_ir.Tensor(
                "fc.w", (1000, 1000), data=rng.normal(0, 0.01, (1000, 1000)).astype(np.float32)
            ),
            "fc.b": mdla_ir.Tensor("fc.b", (1000,), data=np.zeros(1000, np.float32)),
            "logits": mdla_ir.Tensor("logits", (1, 1000)),
        }
    )
    fc = mdla_ir.Op(
        OpKind.FULLY_CONNECTED,
        "classifier.fc",
        (features, "fc.w", "fc.b"),
        ("logits",),
        {"fuse": "NONE"},
    )
    head = w.with_(
        ops=(*w.ops, fc),
        outputs=("logits",),
        boundary={k: v for k, v in w.boundary.items() if k != features},
    )
    mdla_ir.verify(head)
    report = mdla_legalize.explain(head, mdla_legalize.load_target("mdla3.5"))
    assert not report.all_supported
    qgraph = quantize(head, inputs_for("squeezenet1_1", 2, 0), QuantConfig(target="mdla3.5"))
    # the quantizer follows the target (per-tensor FC weights); force the real classifier's
    # per-channel weights, which is what the MDLA rejects
    per_channel = np.abs(head.const("fc.w")).max(axis=1) / 127.0
    qw = np.clip(np.round(head.const("fc.w") / per_channel[:, None]), -127, 127).astype(np.int8)
    q = mdla_ir.QuantParams(tuple(map(float, per_channel)), (0,) * 1000, 0)
    fc_w = mdla_ir.Tensor("fc.w", (1000, 1000), "int8", data=qw, quant=q)
    qgraph = qgraph.with_(tensors={**qgraph.tensors, "fc.w": fc_w})
    manifest = load(save(qgraph, tmp_path / "fc_head.mdla"))
    n = len(qgraph.ops)
    assert emu.supported(manifest) == {"mtk-mdla": [False] * n}  # type: ignore[attr-defined]
    with pytest.raises(TargetError) as info:
        emu.run(manifest, inputs_for("squeezenet1_1", 1, 1)[0])  # type: ignore[attr-defined]
    assert info.value.result == "UNMAPPABLE"
    assert info.value.op_name == "classifier.fc"
    assert emu.bisect(manifest) == n - 1  # type: ignore[attr-defined]
    prefix = emu.supported(manifest, ops=n - 1)  # type: ignore[attr-defined]
    assert prefix == {"mtk-mdla": [True] * (n - 1)}


def test_a_whole_model_gives_the_same_bytes_at_any_thread_count(
    emu: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """efficientnet_b0 (every split the emulator makes on a model: conv pixel tiles and, for
    its one-pixel squeeze-excite convs, output channels; depthwise rows; MEAN rows; elementwise
    chunks) gives the same raw outputs at MDLA_EMU_THREADS 1, 2 and 3, with every op
    that can be cut cut (MDLA_EMU_MIN_WORK=1) and at the default minimum."""
    graph, _ = legalized("efficientnet_b0")
    qgraph = quantize(graph, inputs_for("efficientnet_b0", 2, 0), QuantConfig())
    manifest = load(save(qgraph, tmp_path / "b0.mdla"))
    (xs,) = inputs_for("efficientnet_b0", 1, 5)
    monkeypatch.setenv("MDLA_EMU_THREADS", "1")
    (want,) = emu.run(manifest, xs).raw_outputs  # type: ignore[attr-defined]
    for min_work in ("1", ""):
        monkeypatch.setenv("MDLA_EMU_MIN_WORK", min_work)
        for threads in (2, 3):
            monkeypatch.setenv("MDLA_EMU_THREADS", str(threads))
            (got,) = emu.run(manifest, xs).raw_outputs  # type: ignore[attr-defined]
            assert got.tobytes() == want.tobytes(), f"{threads} threads, min work {min_work!r}"
