"""A zero PAD's histogram taken from its input's (`Histogram.update_padded`) is the one binning
its values gives: counts, range, radius and zero count, over samples whose range grows, holds
no negative value or only zeros; and calibration uses it for every zero PAD, not for another
value's or where the input kept no counts.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from mdla_ir import OpKind
from mdla_ir.testing import GraphBuilder
from mdla_quant.observers import Histogram
from mdla_quant.quantize import calibrate, zero_pads

PADS = ((0, 0), (1, 2), (2, 1), (0, 0))


def same(got: Histogram, want: Histogram) -> None:
    assert (got.lo, got.hi, got.radius, got.zeros) == (want.lo, want.hi, want.radius, want.zeros)
    assert got.updates == want.updates
    assert got.counts.tobytes() == want.counts.tobytes()


def samples(rng: np.random.Generator) -> list[np.ndarray]:
    """Ranges that grow, shrink, sit above zero, hold -0.0 and the radius itself, or are zero."""
    scales = (0.3, 5.0, 0.01, 40.0, 3.0)
    out = [(rng.standard_normal((1, 6, 5, 3)) * s).astype(np.float32) for s in scales]
    out.append(np.abs(out[0]) + np.float32(0.5))  # no zero, no negative: the min falls to 0
    out.append(-out[-1])  # no positive: the max rises to 0
    out.append(np.zeros((1, 6, 5, 3), np.float32))
    edge = out[1].copy()
    edge.reshape(-1)[:3] = -0.0, 64.0, -64.0  # exactly at the radius
    out.append(edge)
    return out


@pytest.mark.parametrize("use_c", [True, False], ids=["c", "numpy"])
@pytest.mark.parametrize("pads", [PADS, ((0, 0), (0, 0), (0, 0), (0, 0))], ids=["pad", "none"])
def test_a_padded_update_is_binning_the_padded_values(
    use_c: bool, pads: tuple[tuple[int, int], ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Histogram, "use_c", use_c)
    source, derived, direct = Histogram(64, keep_last=True), Histogram(64), Histogram(64)
    for x in samples(np.random.default_rng(0)):
        source.update(x)
        padded = np.pad(x, pads)
        assert derived.update_padded(source, padded.size)
        direct.update(padded)
        same(derived, direct)
        alone = Histogram(64, keep_last=True)  # and each sample on its own
        alone.update(x)
        fresh, want = Histogram(64), Histogram(64)
        assert fresh.update_padded(alone, padded.size)
        want.update(padded)
        same(fresh, want)
    assert direct.updates == 9


def test_a_padded_update_refuses_what_it_cannot_derive() -> None:
    """Nothing kept, a stale source, non-finite values: False, and the histogram unchanged."""
    x = np.random.default_rng(1).standard_normal((1, 4, 4, 2)).astype(np.float32)
    h = Histogram(64)
    unkept = Histogram(64)
    unkept.update(x)
    assert not h.update_padded(unkept, x.size + 8)
    source = Histogram(64, keep_last=True)
    source.update(x)
    source.update(x)  # two updates ahead of h's none
    assert not h.update_padded(source, x.size + 8)
    bad = Histogram(64, keep_last=True)
    with np.errstate(invalid="ignore", over="ignore"):
        bad.update(np.array([1.0, np.inf], np.float32))
    assert not h.update_padded(bad, 10)
    same(h, Histogram(64))


def padded_graph() -> tuple[object, list[list[np.ndarray]]]:
    """A zero PAD of the input, one after a ReLU, a PAD of that PAD, and a PAD of 1.5."""
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 6, 5, 3))
    p0 = b.op(OpKind.PAD, [x], "p0", pads=PADS, value=0.0)
    r = b.op(OpKind.RELU, [p0], "r")
    p1 = b.op(OpKind.PAD, [r], "p1", pads=PADS, value=0.0)
    p2 = b.op(OpKind.PAD, [p1], "p2", pads=PADS, value=0.0)
    m = b.op(OpKind.MAX_POOL_2D, [p2], "m", kernel=(3, 3), stride=(2, 2))
    p3 = b.op(OpKind.PAD, [m], "p3", pads=PADS, value=1.5)
    graph = b.build(p3)
    return graph, [[s] for s in samples(np.random.default_rng(2))]


def test_calibration_derives_each_zero_pad_and_keeps_every_histogram(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    graph, calib = padded_graph()
    assert zero_pads(graph) == {"p0": "x", "p1": "r", "p2": "p1"}
    binned: list[int] = []
    real = Histogram.update

    def counting(self: Histogram, x: np.ndarray) -> None:
        binned.append(np.size(x))
        real(self, x)

    monkeypatch.setattr(Histogram, "update", counting)
    fast, _ = calibrate(graph, calib)
    derived_sizes = binned[:]
    quantize_module = sys.modules["mdla_quant.quantize"]  # (mdla_quant.quantize: the function)
    monkeypatch.setattr(quantize_module, "zero_pads", lambda g: {})
    binned.clear()
    slow, _ = calibrate(graph, calib)
    assert fast.keys() == slow.keys()
    for name, h in slow.items():
        same(fast[name], h)
    # p0 and p1 taken from their inputs; p2 (a PAD of a PAD, whose input kept none) and p3
    # (padded with 1.5) binned
    assert len(binned) - len(derived_sizes) == 2 * len(calib)
    assert sum(binned) - sum(derived_sizes) == len(calib) * (9 * 8 * 3 + 12 * 11 * 3)
