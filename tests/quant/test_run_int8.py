"""run_int8: boundary layouts, input quantization, dequantized outputs, chains, and errors."""

from __future__ import annotations

import numpy as np
import pytest

from mdla_ir.builders import act, as_floats, const, qp, random_codes, single_op_qgraph
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import OpKind
from mdla_quant import KernelError, QuantError, run_int8
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes


def test_boundary_permutations_and_dequantized_outputs() -> None:
    q_in, q_out = qp(0.05, -3), qp(0.04, -128)
    g = single_op_qgraph(OpKind.RELU, [act("x", (1, 4, 5, 3), q_in)], (1, 4, 5, 3), q_out)
    g = g.with_(boundary={"x": (0, 2, 3, 1), "out": (0, 2, 3, 1)})
    rng = np.random.default_rng(0)
    x_nchw = rng.normal(0, 2, (1, 3, 4, 5)).astype(np.float32)
    raw = run_int8(g, [x_nchw], raw=True)[0]
    assert raw.shape == (1, 4, 5, 3)
    assert raw.dtype == np.int8
    real = run_int8(g, [x_nchw])[0]
    assert real.shape == (1, 3, 4, 5)
    assert real.dtype == np.float32
    want = np.float32(0.04) * (raw.astype(np.float32) + 128)
    assert np.array_equal(real, want.transpose(0, 3, 1, 2))
    assert np.allclose(real, np.maximum(x_nchw, 0), atol=0.05)


def test_inputs_quantize_with_roundf_and_saturate() -> None:
    q = qp(0.5, 3)
    g = single_op_qgraph(OpKind.RESHAPE, [act("x", (6,), q)], (6,), q, {"shape": (6,)})
    x = np.array([0.25, -0.25, 0.75, 1000.0, -1000.0, 1.0], np.float32)
    assert run_int8(g, [x], raw=True)[0].tolist() == [4, 2, 5, 127, -128, 5]


def _chain() -> Graph:
    """Stride-2 conv, symmetric padding -> ADD const -> AVERAGE_POOL (SAME) -> MEAN -> LOGISTIC."""
    rng = np.random.default_rng(1)
    qx, qc, qa, qm = qp(0.02, 5), qp(0.05, -10), qp(0.07, 3), qp(0.03, -20)
    w = rng.integers(-127, 128, (8, 3, 3, 4)).astype(np.int8)
    ws = rng.uniform(0.002, 0.01, 8).astype(np.float32)
    tensors = [
        act("x", (1, 8, 8, 4), qx),
        const("w", w, qp(ws, 0, 0)),
        const("b", rng.integers(-500, 500, 8).astype(np.int32), qp(np.float32(0.02) * ws, 0, 0)),
        act("c", (1, 4, 4, 8), qc),
        const("k", rng.integers(-127, 128, (1, 1, 1, 8)).astype(np.int8), qp(0.01, 2)),
        act("a", (1, 4, 4, 8), qa),
        act("p", (1, 2, 2, 8), qa),
        act("m", (1, 8), qm),
        act("out", (1, 8), qp(1 / 256, -128)),
    ]
    ops = (
        Op(
            OpKind.CONV_2D,
            "conv",
            ("x", "w", "b"),
            ("c",),
            {
                "stride": (2, 2),
                "dilation": (1, 1),
                "padding": (1, 1, 1, 1),
                "groups": 1,
                "fuse": "RELU6",
            },
        ),
        Op(OpKind.ADD, "add", ("c", "k"), ("a",), {"fuse": "NONE"}),
        Op(
            OpKind.AVERAGE_POOL_2D,
            "pool",
            ("a",),
            ("p",),
            {"kernel": (3, 3), "stride": (2, 2), "padding": (0, 1, 0, 1), "fuse": "NONE"},
        ),
        Op(OpKind.MEAN, "mean", ("p",), ("m",), {"axes": (1, 2), "keepdims": False}),
        Op(OpKind.LOGISTIC, "sigmoid", ("m",), ("out",)),
    )
    return Graph("chain", {t.name: t for t in tensors}, ops, ("x",), ("out",), layout="NHWC")


def test_observe_sees_every_activation_in_order() -> None:
    g = _chain()
    seen: list[tuple[str, tuple[int, ...]]] = []
    codes = random_codes(g, np.random.default_rng(3))
    out = run_int8(
        g, as_floats(g, codes), raw=True, observe=lambda name, q: seen.append((name, q.shape))
    )
    assert seen == [
        ("x", (1, 8, 8, 4)),
        ("c", (1, 4, 4, 8)),
        ("a", (1, 4, 4, 8)),
        ("p", (1, 2, 2, 8)),
        ("m", (1, 8)),
        ("out", (1, 8)),
    ]
    assert out[0].shape == (1, 8)


def test_chain_matches_litert_reference() -> None:
    g = _chain()
    rng = np.random.default_rng(2)
    blob = tflite_bytes(g)  # conv padding (1,1,1,1) at stride 2 on 8x8 is not SAME: a PAD op
    for _ in range(20):
        codes = random_codes(g, rng)
        ours = run_int8(g, as_floats(g, codes), raw=True)[0]
        assert np.array_equal(ours, run_tflite_reference(blob, codes)[0])
    assert len(np.unique(ours)) > 1


def test_errors_name_the_op() -> None:
    q = qp(0.1, 0)
    g = single_op_qgraph(OpKind.DIV, [act("a", (2, 3), q), act("b", (2, 3), q)], (2, 3), q)
    with pytest.raises(KernelError, match="`div0`: no int8 kernel for DIV"):
        run_int8(g, [np.ones((2, 3), np.float32)] * 2)
    g = single_op_qgraph(
        OpKind.CONCATENATION,
        [act("x0", (2,), q), act("x1", (2,), qp(0.2, 0))],
        (4,),
        q,
        {"axis": 0},
    )
    with pytest.raises(KernelError, match=r"`concatenation0` \(CONCATENATION\): input 1 params"):
        run_int8(g, [np.zeros(2, np.float32)] * 2)
    g = single_op_qgraph(OpKind.LOGISTIC, [act("x", (4,), q)], (4,), qp(1 / 128, 0))
    with pytest.raises(KernelError, match=r"`logistic0`.*scale 0\.00390625, zero point -128"):
        run_int8(g, [np.zeros(4, np.float32)])
    g = single_op_qgraph(OpKind.RESHAPE, [act("x", (4,), q)], (5,), q, {"shape": (4,)})
    with pytest.raises(KernelError, match=r"`reshape0`.*computed shape \(4,\), graph says \(5,\)"):
        run_int8(g, [np.zeros(4, np.float32)])


def test_graph_level_errors() -> None:
    q = qp(0.1, 0)
    g = single_op_qgraph(OpKind.RELU, [act("x", (4,), q)], (4,), q)
    with pytest.raises(QuantError, match="layout NCHW"):
        run_int8(g.with_(layout="NCHW"), [np.zeros(4, np.float32)])
    with pytest.raises(QuantError, match="input `x` holds NaN or inf"):
        run_int8(g, [np.array([0, 1, np.nan, 2], np.float32)])
    with pytest.raises(QuantError, match="unknown rounding `nearest`"):
        run_int8(g, [np.zeros(4, np.float32)], rounding="nearest")
    float_in = g.with_(tensors={**g.tensors, "x": g.tensors["x"].__class__("x", (4,))})
    with pytest.raises(QuantError, match="boundary tensor `x` is not per-tensor int8"):
        run_int8(float_in, [np.zeros(4, np.float32)])


def test_int32_accumulator_overflow_is_an_error_not_a_wrap() -> None:
    """70,000 taps of 255 * 127 exceed int32, where TFLite would silently wrap."""
    c = 70_000
    g = single_op_qgraph(
        OpKind.CONV_2D,
        [
            act("x", (1, 1, 1, c), qp(0.01, -128)),
            const("w", np.full((1, 1, 1, c), 127, np.int8), qp(0.01, 0, 0)),
        ],
        (1, 1, 1, 1),
        qp(1.0, 0),
        {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1},
    )
    with pytest.raises(KernelError, match=r"`conv_2d0`.*int32 accumulator overflows"):
        run_int8(g, [np.full((1, 1, 1, c), 2.55, np.float32)])  # x - z = 255
    fits = np.full((1, 1, 1, c), 0.64, np.float32)  # x - z = 64: 70,000 * 64 * 127 < 2^31
    assert run_int8(g, [fits], raw=True)[0].item() == 127
