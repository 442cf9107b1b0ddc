"""`mdla_quant.simulate`: the float graph with only the int8 graph's weight roundings, only its
activation grids, both or neither; `float_rewrites` (the float graph quantize rounds); and the
float interpreter's `replace` hook it runs on."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import mdla_ir
from mdla_ir import Graph, OpKind
from mdla_ir.testing import GraphBuilder
from mdla_quant import QuantConfig, QuantError, float_rewrites, quantize, run_int8, simulate
from tests.quant.test_equalize_adaround import chain, samples

Array = np.ndarray[Any, Any]


def fc_graph(seed: int = 0) -> Graph:
    """x (1, 8) -> FULLY_CONNECTED (4 x 8, bias) -> y (1, 4)."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(name="fc", layout="NHWC")
    x = b.input("x", (1, 8))
    w = b.const("w", rng.standard_normal((4, 8)).astype(np.float32) * [[0.1], [1], [3], [0.5]])
    bias = b.const("b", rng.standard_normal(4).astype(np.float32))
    y = b.op(OpKind.FULLY_CONNECTED, [x, w, bias], name="fc", fuse="NONE")
    return b.build(y)


def fc_inputs(n: int, seed: int = 1) -> list[list[Array]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((1, 8)).astype(np.float32)] for _ in range(n)]


def dequant(q: Array, scale: Any, zero: Any = 0) -> Array:
    return (np.asarray(q, np.float64) - np.asarray(zero, np.float64)) * np.asarray(scale)


def grid(v: Array, scale: float, zero: int) -> Array:
    """The int8 grid by hand: half away from zero, as TFLite's quantize."""
    r = v.astype(np.float64) / np.float32(scale)
    level = np.clip(np.sign(r) * np.floor(np.abs(r) + 0.5) + zero, -128, 127)
    return (level - zero) * np.float32(scale)


@pytest.fixture(scope="module")
def fc() -> tuple[Graph, Graph, list[list[Array]]]:
    graph = fc_graph()
    calib = fc_inputs(16)
    return graph, quantize(graph, calib, QuantConfig(method="minmax")), fc_inputs(4, seed=7)


def test_neither_rounding_is_the_float_graph(fc: tuple[Graph, Graph, Any]) -> None:
    graph, q, xs = fc
    for x in xs:
        got = simulate(graph, q, x, weights=False, activations=False)[0]
        np.testing.assert_array_equal(got, mdla_ir.run_float(graph, x)[0])


def test_weights_only_is_float_arithmetic_on_the_dequantized_int8_weights(
    fc: tuple[Graph, Graph, Any],
) -> None:
    graph, q, xs = fc
    w, b = q.tensors["w"], q.tensors["b"]
    assert w.quant is not None
    assert b.quant is not None
    assert w.quant.channel_dim is None
    w_dq = dequant(w.data, w.quant.scale[0])  # FULLY_CONNECTED weights are per tensor
    b_dq = dequant(b.data, b.quant.scale)
    for (x,) in xs:
        want = x.astype(np.float64) @ w_dq.T + b_dq
        got = simulate(graph, q, [x], activations=False)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        assert not np.allclose(got, mdla_ir.run_float(graph, [x])[0], atol=1e-5)  # it rounded


def test_activations_only_rounds_input_and_output_to_their_grids(
    fc: tuple[Graph, Graph, Any],
) -> None:
    graph, q, xs = fc
    qx, qy = q.tensors["x"].quant, q.tensors[graph.outputs[0]].quant
    assert qx is not None
    assert qy is not None
    w, bias = graph.const("w").astype(np.float64), graph.const("b").astype(np.float64)
    for (x,) in xs:
        x_grid = grid(x, qx.scale[0], qx.zero_point[0])
        want = grid((x_grid @ w.T + bias).astype(np.float32), qy.scale[0], qy.zero_point[0])
        got = simulate(graph, q, [x], weights=False)[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_both_roundings_come_close_to_the_int8_reference() -> None:
    graph = chain()
    q = quantize(graph, samples(8), QuantConfig(method="minmax"))
    out = q.tensors[q.outputs[0]].quant
    assert out is not None
    for x in samples(3, seed=5):
        sim = simulate(graph, q, x)[0]
        ref = run_int8(q, x)[0]
        flt = mdla_ir.run_float(graph, x)[0]
        # measured: 88-96 % of the outputs equal run_int8's, 0.05-0.15 steps off on average
        # (the kernels' requantization rounds differently), the float graph 3.4-4.4 steps
        steps = np.abs(sim - ref) / out.scale[0]
        assert (steps < 0.5).mean() > 0.85
        assert steps.mean() < 0.25 < 2 < np.abs(flt - ref).mean() / out.scale[0]


def test_float_rewrites_is_what_an_equalizing_quantize_rounds() -> None:
    graph, calib = chain(), samples(8)
    config = QuantConfig(method="minmax", equalize=True, weight_rounding="nearest")  # |e| <= s/2
    rewritten = float_rewrites(graph, calib, config)
    assert float_rewrites(graph, calib, QuantConfig()) is graph  # nothing to rewrite
    assert not np.array_equal(rewritten.const("w1"), graph.const("w1"))  # equalized
    q = quantize(graph, calib, config)
    x = samples(1, seed=3)[0]
    exact = simulate(rewritten, q, x, weights=False, activations=False)[0]
    np.testing.assert_allclose(exact, mdla_ir.run_float(graph, x)[0], rtol=1e-4, atol=1e-4)
    # its int8 weights are roundings of the rewritten graph's, not of the original's
    w_q = q.tensors["w1"]
    assert w_q.quant is not None
    scale = np.asarray(w_q.quant.scale)[:, None, None, None]
    assert np.abs(dequant(w_q.data, scale) - rewritten.const("w1")).max() <= scale.max() / 2
    assert np.abs(dequant(w_q.data, scale) - graph.const("w1")).max() > scale.max()


def test_an_int8_graph_of_another_model_is_refused(fc: tuple[Graph, Graph, Any]) -> None:
    _, q, _ = fc
    with pytest.raises(QuantError, match="`fc` is not an int8 graph of `test`"):
        simulate(chain(), q, samples(1)[0])


def test_a_constant_of_another_shape_is_refused(fc: tuple[Graph, Graph, Any]) -> None:
    graph, q, xs = fc
    w = q.tensors["w"]
    assert w.data is not None
    other = q.with_(tensors={**q.tensors, "w": dataclasses.replace(w, data=w.data[:2])})
    with pytest.raises(QuantError, match=r"constant `w` is \(4, 8\) in `fc` but \(2, 8\)"):
        simulate(graph, other, xs[0])
    # with float weights the constants are not read: the activation grids alone still run
    assert simulate(graph, other, xs[0], weights=False)[0].shape == (1, 4)


def test_evaluate_stores_what_replace_returns() -> None:
    graph = fc_graph()
    seen: list[str] = []

    def zero_input(name: str, value: Array) -> Array:
        seen.append(name)
        return np.zeros_like(value) if name == "x" else value

    x = fc_inputs(1)[0]
    out = mdla_ir.evaluate(graph, x, replace=zero_input)[graph.outputs[0]]
    np.testing.assert_allclose(out[0], graph.const("b"), rtol=1e-6)  # W @ 0 + b
    assert seen == ["x", *(o for op in graph.ops for o in op.outputs)]
