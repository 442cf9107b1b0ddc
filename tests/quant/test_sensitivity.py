"""`mdla_quant.sensitivity`: per tensor, what making it int16 gains (simulated on held-out data),
and `simulate`'s 16x8 grid it is measured on."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from mdla_ir import Graph, OpKind, QuantParams
from mdla_ir.testing import GraphBuilder
from mdla_quant import QuantConfig, QuantError, quantize
from mdla_quant.sensitivity import candidates, sensitivity
from mdla_quant.simulate import activation_grids, int16_grid, simulate

Array = np.ndarray[Any, Any]


def mlp(seed: int = 0) -> Graph:
    """x (1, 16) -> FC h (32) -> FC h2 (32, RELU) -> FC logits (10): a small classifier."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(name="mlp", layout="NHWC")
    t = b.input("x", (1, 16))
    for name, (n, k), fuse in (
        ("h", (32, 16), "NONE"),
        ("h2", (32, 32), "RELU"),
        ("logits", (10, 32), "NONE"),
    ):
        w = b.const(f"{name}.w", (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32))
        bias = b.const(f"{name}.b", rng.standard_normal(n).astype(np.float32) * 0.1)
        t = b.op(OpKind.FULLY_CONNECTED, [t, w, bias], name=name, fuse=fuse)
    return b.build(t)


def inputs(n: int, seed: int) -> list[list[Array]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((1, 16)).astype(np.float32)] for _ in range(n)]


@pytest.fixture(scope="module")
def pair() -> tuple[Graph, Graph]:
    graph = mlp()
    return graph, quantize(graph, inputs(32, 1), QuantConfig(method="minmax"))


def widened(q: Graph, name: str, factor: float) -> Graph:
    """`q` with tensor `name`'s int8 range `factor` times too wide (a coarse grid)."""
    t = q.tensors[name]
    assert t.quant is not None
    scale = t.quant.scale[0] * factor
    tensors = {**q.tensors, name: dataclasses.replace(t, quant=QuantParams((scale,), (0,)))}
    return q.with_(tensors=tensors)


def test_the_int16_grid_covers_the_int8_range_symmetrically() -> None:
    scale, zero, qmin, qmax = int16_grid(0.1, -28.0)  # int8 range [-10, 15.5]
    assert (zero, qmin, qmax) == (0.0, -32768, 32767)
    assert scale == pytest.approx(15.5 / 32767, rel=1e-6)


def test_int16_tensors_are_simulated_on_the_finer_grid(pair: tuple[Graph, Graph]) -> None:
    graph, q = pair
    grids = activation_grids(graph, q, int16=("h",))
    assert grids["h"][2:] == (-32768, 32767)
    assert grids["h2"][2:] == (-128, 127)
    x = inputs(32, 1)[5]  # calibrated: no grid clips it, int8 and int16 alike
    all8 = simulate(graph, q, x)[0]
    all16 = simulate(graph, q, x, int16=candidates(graph, q))[0]
    exact_acts = simulate(graph, q, x, activations=False)[0]
    assert np.abs(all16 - exact_acts).max() < 0.05 * np.abs(all8 - exact_acts).max()


def test_a_badly_ranged_tensor_ranks_first(pair: tuple[Graph, Graph]) -> None:
    graph, q = pair
    bad = widened(q, "h2", 40.0)
    found = sensitivity(graph, bad, inputs(24, 9))
    assert found.gains[0].tensor == "h2"
    assert found.gains[0].gain_db > 10.0
    assert (
        set(candidates(graph, q)) == {g.tensor for g in found.gains} == {"x", "h", "h2", "logits"}
    )
    assert found.agreement is not None  # (1, 10) logits: a classifier
    assert found.gains[0].agreement is not None
    assert found.gains[0].agreement >= found.agreement
    again = sensitivity(graph, widened(q, "h", 40.0), inputs(24, 9))
    assert again.gains[0].tensor == "h"


def test_gains_are_against_all_int8(pair: tuple[Graph, Graph]) -> None:
    graph, q = pair
    found = sensitivity(graph, q, inputs(8, 9), tensors=["h"])
    (gain,) = found.gains
    assert gain.gain_db == pytest.approx(gain.sqnr_db - found.sqnr_db)


def test_bad_requests_are_refused(pair: tuple[Graph, Graph]) -> None:
    graph, q = pair
    with pytest.raises(QuantError, match="no held-out inputs"):
        sensitivity(graph, q, [])
    with pytest.raises(QuantError, match=r"`h\.w` is not an int8 activation"):
        sensitivity(graph, q, inputs(2, 9), tensors=["h.w"])
