"""`mdla_quant.sensitivity`: per tensor, what making it int16 gains (simulated on held-out data),
and `simulate`'s 16x8 grid it is measured on."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from mdla_ir import Graph, OpKind, QuantParams, run_float
from mdla_ir.testing import GraphBuilder
from mdla_quant import QuantConfig, QuantError, quantize, run_int8
from mdla_quant import sensitivity as sensitivity_module
from mdla_quant.sensitivity import candidates, sensitivity, simulate_a16
from mdla_quant.simulate import activation_grids, int16_grid, simulate, with_int8_weights

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
    all16 = simulate(graph, q, x, int16=("x", "h", "h2", "logits"))[0]
    exact_acts = simulate(graph, q, x, activations=False)[0]
    assert np.abs(all16 - exact_acts).max() < 0.05 * np.abs(all8 - exact_acts).max()


def test_a_badly_ranged_tensor_ranks_first(pair: tuple[Graph, Graph]) -> None:
    graph, q = pair
    found = sensitivity(graph, widened(q, "h", 40.0), inputs(24, 9))
    assert found.gains[0].tensor == "h"
    assert found.gains[0].tensors == ("h", "h2")  # read at 16 bits by FC h2 run 16x8
    assert found.gains[0].gain_db > 10.0
    assert set(candidates(graph, q)) == {g.tensor for g in found.gains} == {"h", "h2", "logits"}
    assert found.agreement is not None  # (1, 10) logits: a classifier
    assert found.gains[0].agreement is not None
    assert found.gains[0].agreement >= found.agreement
    # h2's only reader writes the graph's output, which may be int16 too (a manifest's output)
    by_tensor = {g.tensor: g for g in found.gains}
    assert by_tensor["h2"].tensors == ("h2", "logits")
    assert by_tensor["logits"].tensors == ("logits",)


def test_an_int16_graph_output_gains_its_own_rounding(pair: tuple[Graph, Graph]) -> None:
    """A badly ranged graph output: 16 bits on it are the only cure, and it is a candidate."""
    graph, q = pair
    found = sensitivity(graph, widened(q, "logits", 40.0), inputs(16, 9), tensors=["logits"])
    (gain,) = found.gains
    assert gain.tensor == "logits"
    assert gain.gain_db > 10.0


def test_gains_are_against_all_int8(pair: tuple[Graph, Graph]) -> None:
    graph, q = pair
    found = sensitivity(graph, q, inputs(8, 9), tensors=["h"])
    (gain,) = found.gains
    assert gain.gain_db == pytest.approx(gain.sqnr_db - found.sqnr_db)


def test_the_boundaries_are_built_once_per_candidate_not_per_input(
    pair: tuple[Graph, Graph], monkeypatch: pytest.MonkeyPatch
) -> None:
    graph, q = pair
    built: list[tuple[str, ...]] = []
    real = sensitivity_module.requantize_boundaries

    def counted(g: Graph, names: tuple[str, ...]) -> tuple[Graph, frozenset[str]]:
        built.append(names)
        return real(g, names)

    monkeypatch.setattr(sensitivity_module, "requantize_boundaries", counted)
    found = sensitivity(graph, q, inputs(6, 9), tensors=["h", "h2"])
    assert len(built) == 1 + len(found.gains)  # all-int8, then each candidate's unit
    batch = inputs(3, 4)
    rounded = with_int8_weights(graph, q)
    together = simulate_a16(rounded, q, batch, ("h",))
    assert len(together) == 3
    for x, outs in zip(batch, together, strict=True):
        (alone,) = simulate_a16(rounded, q, [x], ("h",))
        assert all(np.array_equal(a, b) for a, b in zip(alone, outs, strict=True))


def test_bad_requests_are_refused(pair: tuple[Graph, Graph]) -> None:
    graph, q = pair
    with pytest.raises(QuantError, match="no held-out inputs"):
        sensitivity(graph, q, [])
    with pytest.raises(QuantError, match=r"`h\.w` is not an int8 activation"):
        sensitivity(graph, q, inputs(2, 9), tensors=["h.w"])


def outlier_mlp() -> Graph:
    """`mlp` whose `h` has one channel 100 times the others' (so its int8 grid is coarse for
    the rest), a channel `h2` ignores: `h` is the tensor 16 bits help."""
    graph = mlp()
    w = np.array(graph.const("h.w"))
    w[0] *= 100.0
    w2 = np.array(graph.const("h2.w"))
    w2[:, 0] = 0.0
    tensors = dict(graph.tensors)
    for name, data in (("h.w", w), ("h2.w", w2)):
        tensors[name] = dataclasses.replace(tensors[name], data=data)
    return graph.with_(tensors=tensors)


def test_the_simulated_gain_ranks_like_the_16x8_kernels() -> None:
    """Each inner tensor read at 16 bits (`unit`): `run_int8` (TFLite's 16x8 arithmetic) and
    the simulation agree on which tensor gains most, and on each gain within 0.5 dB."""
    graph, calib, held = outlier_mlp(), inputs(32, 1), inputs(24, 9)
    config = QuantConfig(method="minmax")
    q = quantize(graph, calib, config)
    found = sensitivity(graph, q, held, tensors=["h", "h2"])
    ref = [run_float(graph, x)[0] for x in held]

    def real_db(qg: Graph) -> float:
        test = [run_int8(qg, x)[0] for x in held]
        signal = sum(float((r.astype(np.float64) ** 2).sum()) for r in ref)
        noise = sum(
            float(((t - r).astype(np.float64) ** 2).sum()) for r, t in zip(ref, test, strict=True)
        )
        return float(10 * np.log10(signal / noise))

    base = real_db(q)
    units = {g.tensor: g.tensors for g in found.gains}
    real = {
        n: real_db(quantize(graph, calib, dataclasses.replace(config, a16=units[n])))
        for n in ("h", "h2")
    }
    assert found.gains[0].tensor == max(real, key=lambda n: real[n]) == "h"
    assert found.gains[0].gain_db > 2.0  # measured: 3.18 simulated, 3.20 by run_int8
    assert abs(found.gains[0].gain_db - (real["h"] - base)) < 0.5
    assert abs(found.gains[1].gain_db - (real["h2"] - base)) < 0.5
