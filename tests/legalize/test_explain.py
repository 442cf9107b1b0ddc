"""explain(): per op supported or not, the reason, and the fix."""

from __future__ import annotations

import pytest

import mdla_ir
from mdla_ir import OpKind
from mdla_ir.testing import GraphBuilder
from mdla_legalize import LegalizeError, explain, legalize, load_target, to_nhwc
from mdla_quant import QuantConfig, quantize
from mdla_zoo import load_model
from tests.quant.test_quantize import net, samples

TARGET = load_target("mdla3.5")


@pytest.fixture(scope="module")
def b0_report() -> str:
    model = load_model("efficientnet_b0")
    graph = mdla_ir.from_torch(model.module, model.example_inputs)
    return explain(graph, TARGET)  # type: ignore[return-value]


def test_unlegalized_efficientnet_names_silu_linear_and_padding(b0_report) -> None:  # type: ignore[no-untyped-def]
    report = b0_report
    assert not report.all_supported
    rows = {o.kind: o for o in report.ops}
    silu = [o for o in report.ops if o.kind == "SILU"]
    assert len(silu) == 49
    assert all(
        not o.supported and "SiLU" in o.reason and o.fix == "rule silu_to_logistic_mul"
        for o in silu
    )
    logistic = [o for o in report.ops if o.kind == "LOGISTIC"]
    assert len(logistic) == 16
    assert all(o.supported for o in logistic)
    fc = rows["FULLY_CONNECTED"]
    assert not fc.supported
    assert "per-channel" in fc.reason
    assert fc.name == "classifier.1"
    assert fc.fix == "rule linear_to_conv1x1"
    strided = [o for o in report.ops if "TF-SAME" in o.reason]
    assert strided
    assert all(o.fix == "rule conv_pad_to_pad_valid" for o in strided)
    assert all(o.supported for o in report.ops if o.kind in ("ADD", "MUL", "MEAN"))
    assert any("layout is NCHW" in n for n in report.notes)
    text = str(report)
    assert "features.0.2" in text
    assert "silu_to_logistic_mul" in text
    assert text.splitlines()[0].startswith("EfficientNet on mdla3.5/mtk-mdla: ")


def _unmappable() -> mdla_ir.Graph:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 6, 6))
    conv = b.op(
        OpKind.CONV_2D,
        [x, b.const("w", (4, 4, 1, 1)), b.const("b", (4,))],
        name="conv",
        stride=(1, 1),
        dilation=(1, 1),
        padding=(0, 0, 0, 0),
        groups=1,
        fuse="NONE",
    )
    shuffled = b.op(OpKind.CHANNEL_SHUFFLE, [conv], name="shuffle", groups=2, axis=1)
    y = b.op(
        OpKind.LAYER_NORM,
        [shuffled, b.const("g", (6,)), b.const("be", (6,))],
        name="norm",
        normalized_shape=(6,),
        eps=1e-5,
    )
    return b.build(y)


def test_channel_shuffle_and_layernorm_are_not_mappable() -> None:
    graph = to_nhwc(_unmappable()).graph
    report = explain(graph, TARGET)
    rows = {o.name: o for o in report.ops}
    assert rows["conv"].supported
    assert not rows["shuffle"].supported
    assert "CHANNEL_SHUFFLE" in rows["shuffle"].reason
    assert rows["shuffle"].fix.startswith("not mappable on this device: no CHANNEL_SHUFFLE")
    assert "RSQRT" in rows["norm"].reason
    assert rows["norm"].fix.startswith("not mappable on this device: LayerNorm needs RSQRT")


def test_legalize_raises_listing_every_unmappable_op() -> None:
    with pytest.raises(LegalizeError) as info:
        legalize(_unmappable(), TARGET)
    message = str(info.value)
    assert "CHANNEL_SHUFFLE" not in message  # legalized: a 1x1 permutation CONV_2D
    assert "`norm` (LAYER_NORM): LayerNorm needs RSQRT" in message
    names = [item.split("`")[1] for item in info.value.items]
    assert "shuffle" not in names
    assert "norm" in names
    assert "conv" not in names


def test_gpu_maps_what_the_mdla_does_not() -> None:
    report = explain(to_nhwc(_unmappable()).graph, TARGET, device="mtk-gpu")
    rows = {o.name: o for o in report.ops}
    assert rows["conv"].supported
    assert not rows["shuffle"].supported


def test_unknown_device() -> None:
    with pytest.raises(LegalizeError, match="has no device `npu`"):
        explain(_unmappable(), TARGET, device="npu")


def test_rank_and_dim_limits() -> None:
    b = GraphBuilder(layout="NHWC")
    y = b.op(OpKind.RELU, [b.input("x", (1, 70000, 2, 2))])
    z = b.op(OpKind.RELU, [b.input("v", (1, 2, 2, 2, 2))])
    report = explain(b.build(y, z), TARGET)
    assert "dim > 65535" in report.ops[0].reason
    assert "rank 5 > 4" in report.ops[1].reason


def test_quantized_dtypes_are_checked() -> None:
    b = GraphBuilder(layout="NHWC")
    y = b.op(OpKind.RELU, [b.input("x", (1, 2, 2, 2))])
    graph = b.build(y)
    t = graph.tensors["x"]
    graph = graph.with_(tensors={**graph.tensors, "x": t.__class__("x", t.shape, "int32")})
    assert "is int32" in explain(graph, TARGET).ops[0].reason


def test_a_quantized_graph_says_why_each_int16_tensor_is_int16() -> None:
    """The recorded gain of each chosen tensor, the request, and the requantized copies."""
    config = QuantConfig(a16=("c2", "ap"), a16_gain_db=(0.5, 0.125), a16_mode="auto:10%")
    report = explain(quantize(net(), samples(4), config), TARGET)
    why = {o.name: o.int16 for o in report.ops if o.int16}
    assert why == {
        "c2": "+0.50 dB output SQNR (measured by --a16 auto:10%)",
        "ap": "+0.12 dB output SQNR (measured by --a16 auto:10%)",
        "c/a16/quantize": "a copy of `c` for the 16x8 ops reading it (--a16 auto:10%)",
    }
    assert "  int16: `c2` (CONV_2D): +0.50 dB output SQNR" in str(report)
    named = explain(quantize(net(), samples(4), QuantConfig(a16=("th",))), TARGET)
    assert {o.name: o.int16 for o in named.ops if o.int16 and o.kind == "TANH"} == {
        "th": "named by QuantConfig.a16"
    }
    assert not [o for o in explain(net(), TARGET).ops if o.int16]  # a float graph: none
