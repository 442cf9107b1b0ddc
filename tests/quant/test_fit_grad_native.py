"""AdaRound's per-step loss gradient at a layer's output in one pass of C (csrc/fit_grad.c)
against the numpy passes it replaces, bit for bit: every fused activation, edge values in the
GEMM's output, the bias and the target (+-0, +-inf, NaN, the clip bounds themselves), rows
drawn twice, and the rows cut over threads; with the output's int8 grid in the loss, numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_quant import adaround, native, soft_rounding
from mdla_quant.adaround import _Layer
from tests.quant.native_symbols import symbol_kinds

Array = np.ndarray[Any, Any]
EDGES = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 6.0, -1.0, 1.0, 1e-30, -1e30, 3e38], np.float32
)


def _with_edges(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> Array:
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    pick = rng.random(shape) < 0.2
    x[pick] = rng.choice(EDGES, int(pick.sum()))
    return x


def _same(a: Array, b: Array) -> bool:
    """Bit for bit, a NaN's payload aside."""
    nan = np.isnan(a)
    return bool(
        np.array_equal(nan, np.isnan(b))
        and np.array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32))
    )


def _layer(fuse: str, out_scale: float = 0.0) -> _Layer:
    layer = _Layer.__new__(_Layer)
    layer.fuse, layer.out_scale, layer.out_zero = fuse, out_scale, 3
    return layer


@pytest.mark.parametrize("fuse", ["NONE", "RELU", "RELU6", "RELU1"])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf and the like, on purpose
def test_the_c_pass_gives_numpys_bits(fuse: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert native.library() is not None
    monkeypatch.setattr(soft_rounding, "MIN_CHUNK", 1)  # the rows over threads
    monkeypatch.setattr(soft_rounding, "threads", lambda: 3)
    rng = np.random.default_rng(11)
    m, o, rows = 41, 29, 60
    a = _with_edges(rng, (m, o), 3.0)
    bias = _with_edges(rng, (o,), 1.0)
    target = _with_edges(rng, (rows, o), 2.0)
    idx = rng.integers(0, rows, m)
    idx[:5] = idx[5]  # a row drawn several times
    e0 = 0.0123456789
    layer = _layer(fuse)
    got = layer.loss_grad(a.copy(), bias, target, idx, e0)
    monkeypatch.setattr(adaround, "library", lambda: None)
    want = layer.loss_grad(a.copy(), bias, target, idx, e0)
    y, dact = layer.act(a + bias)  # the loop's own form before the pass
    before = 2.0 * (y - target[idx]) * dact / (y.size * e0)
    assert _same(want, before)
    assert _same(got, want)
    assert np.isnan(got).any()  # the edges were reached ...
    assert (got != 0).any()  # ... and the rest is not all masked


def test_the_pass_writes_over_the_gemms_rows() -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    target = rng.standard_normal((30, 8)).astype(np.float32)
    bias = np.zeros(8, np.float32)
    got = _layer("RELU6").loss_grad(a, bias, target, np.arange(16), 0.5)
    assert got is a


def test_the_output_grid_in_the_loss_keeps_numpy() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    target = rng.standard_normal((30, 8)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    layer, idx = _layer("RELU6", out_scale=0.05), np.arange(16) * 2 % 30
    got = layer.loss_grad(a.copy(), bias, target, idx, 0.5)
    y, dact = layer.act(a + bias)
    assert got is not a
    assert _same(got, 2.0 * (y - target[idx]) * dact / (y.size * 0.5))


def test_the_element_wise_passes_are_picked_for_the_cpus_vector_width() -> None:
    """On x86-64 the per-layer fit's C passes (the soft weight and step, the depthwise layer's
    taps, this gradient) and calibration's depthwise conv (which lockstep runs too) are ifuncs
    over their AVX2 and baseline builds (GCC's target_clones); the tests of each hold
    whichever the CPU runs to numpy's (or the interpreter's) bits."""
    kinds = symbol_kinds()
    names = ["sr_soft", "sr_front", "sr_back", "taps_forward", "taps_grad", "fit_dy", "dw"]
    assert {n: kinds[f"mdla_{n}_f32"] for n in names} == dict.fromkeys(names, "i")
