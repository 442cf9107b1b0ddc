"""SoftRounding's C passes (csrc/soft_rounding.c) against its numpy form, bit for bit: the
soft weight and every buffer after each of several steps, over random data with the edge
values in it (V at +-inf, +-0 and where h clips; b + h at and past +-127; zero, -0.0 and
infinite gradients), each scale layout, every kind of power (general and numpy's fast
exponents), both orders of Adam's learning rate, and blocks cut over threads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from mdla_quant import native, soft_rounding
from mdla_quant.soft_rounding import SoftRounding

Array = np.ndarray[Any, Any]
BUFFERS = ("_v", "m", "s2", "sig", "h", "bh", "w", "g")


def _edges(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[Array, Array, Array]:
    """V, the base floor(w / s) and a gradient of `shape`, a third of each at edge values."""
    v = (rng.standard_normal(shape) * 3).astype(np.float32)
    base = np.floor(rng.uniform(-130, 130, shape)).astype(np.float32)
    grad = (rng.standard_normal(shape) * 1e-3).astype(np.float32)
    v_edges = np.array([np.inf, -np.inf, 0.0, -0.0, 60.0, -60.0, 2.3978953, -2.3978953], np.float32)
    pick = rng.random(shape) < 1 / 3
    v[pick] = rng.choice(v_edges, pick.sum())
    pick = rng.random(shape) < 1 / 3
    base[pick] = rng.choice(np.array([-128, -127, -126, 126, 127, 128], np.float32), pick.sum())
    pick = rng.random(shape) < 0.1
    grad[pick] = rng.choice(np.array([0.0, -0.0, np.inf, -np.inf, 1e30], np.float32), pick.sum())
    return v, base, grad


def _same(a: Array, b: Array) -> bool:
    """Bit for bit, a NaN's payload aside."""
    nan = np.isnan(a)
    return bool(
        np.array_equal(nan, np.isnan(b))
        and np.array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32))
    )


SCALES: dict[str, Callable[[np.random.Generator, int, int], Array]] = {
    "one": lambda rng, k, o: np.array(0.02, np.float32),
    "(1,)": lambda rng, k, o: np.array([0.03], np.float32),
    "per column": lambda rng, k, o: rng.uniform(1e-3, 0.1, (1, o)).astype(np.float32),
    "every other": lambda rng, k, o: rng.uniform(1e-3, 0.1, (1, 2 * o)).astype(np.float32)[:, ::2],
}


@pytest.mark.parametrize("scale", list(SCALES))
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("late_lr", [False, True])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf * 0 and the like, on purpose
def test_the_c_passes_give_numpys_bits(
    scale: str, order: str, late_lr: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert native.library() is not None
    monkeypatch.setattr(soft_rounding, "CHUNK", 40)  # several blocks of rows ...
    monkeypatch.setattr(soft_rounding, "MIN_CHUNK", 1)  # ... over threads
    monkeypatch.setattr(soft_rounding, "threads", lambda: 2)
    rng = np.random.default_rng(7)
    k, o = 37, 23  # F: a conv's (K, O) held as its transpose, one scale per row
    v, base, _ = _edges(rng, (k, o))
    s = SCALES[scale](rng, k, o)
    v, base = np.asarray(v, order=order), np.asarray(base, order=order)  # type: ignore[call-overload]
    fast = SoftRounding(base, v.copy(order="K"), s, 0.01, late_lr)
    monkeypatch.setattr(soft_rounding, "library", lambda: None)
    slow = SoftRounding(base, v.copy(order="K"), s, 0.01, late_lr)
    assert fast.lib is not None
    assert slow.lib is None
    assert fast.flip == slow.flip == (order == "F")
    for t, beta in enumerate([None, None, 20.0, 11.3, 3.0, 2.5, 2.0, 1.5], start=1):
        assert _same(fast.soft(), slow.soft()), t
        _, _, grad = _edges(rng, (k, o))
        grad = np.asarray(grad, order="F" if t % 2 else "C")  # both gradient layouts
        fast.step(grad, t, beta)
        slow.step(grad, t, beta)
        for name in BUFFERS:
            assert _same(getattr(fast, name), getattr(slow, name)), (t, name)
    assert np.isnan(fast.v).any()  # the edges were reached ...
    assert np.isfinite(fast.v).any()  # ... and not everywhere


def test_operands_not_float32_keep_numpy() -> None:
    """A float64 scale (numpy would multiply in float64) or gradient takes the numpy form."""
    v, base = np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32)
    assert SoftRounding(base, v, np.array(0.1), 0.01).lib is None
    soft = SoftRounding(base, v.copy(), np.array(0.1, np.float32), 0.01)
    ref = SoftRounding(base, v.copy(), np.array(0.1, np.float32), 0.01)
    ref.lib = None
    grad = np.full((4, 3), 1e-3, np.float64)
    for s in (soft, ref):
        s.soft()
        s.step(grad, 1, None)
    assert soft.lib is not None
    assert _same(soft.v, ref.v)
