"""Block reconstruction's depthwise kernels on a step's pixel rows (`mdla_quant.block_taps`):
each is the sum it names, computed from every tap's materialized value, C and numpy give it
bit for bit, and no cut of the channels over threads changes a bit of it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_quant import block_taps, native, soft_rounding
from mdla_quant.block_reconstruction import fused_quant
from mdla_quant.block_taps import depthwise, depthwise_grad, pixel_grad
from tests.quant.native_symbols import symbol_kinds


def _step(seed: int = 0) -> tuple[Any, Any, Any, Any, Any, Any]:
    """A step's 40 positions (some sampled twice) x 9 taps over 30 pixel rows (row 0: the
    padding, read by several positions at one offset), with 21 channels."""
    rng = np.random.default_rng(seed)
    positions, taps, pixels, channels = 40, 9, 30, 21
    idx = rng.integers(0, 25, positions)
    assert len(np.unique(idx)) < positions
    # each sampled position reads a different pixel at one offset (1..29), or the padding (0)
    table = np.stack([rng.permutation(np.arange(1, pixels))[:25] for _ in range(taps)], 1)
    table[rng.random(table.shape) < 0.2] = 0
    tap = table[idx]
    z = rng.standard_normal((pixels, channels)).astype(np.float32)
    w = rng.standard_normal((taps, channels)).astype(np.float32)
    dd = rng.standard_normal((positions, channels)).astype(np.float32)
    return z, tap, idx, w, dd, pixels


def _kernels(z: Any, tap: Any, idx: Any, w: Any, dd: Any, pixels: int) -> list[bytes]:
    """The three kernels' bytes (pixel_grad's without the padding's row 0)."""
    out = depthwise(z, tap, w, np.empty(dd.shape, np.float32))
    grads = depthwise_grad(z, tap, dd), pixel_grad(tap, idx, dd, w, pixels)[1:]
    mask = np.random.default_rng(9).random((pixels, dd.shape[1])) < 0.7
    into = np.full((pixels, dd.shape[1]), np.nan, np.float32)  # a reused array's garbage
    masked = pixel_grad(tap, idx, dd, w, pixels, mask, into)[1:]
    return [a.tobytes() for a in (out, *grads, masked)]


@pytest.mark.parametrize("c", [True, False])
def test_each_kernel_is_the_sum_it_names(c: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(block_taps, "NATIVE", c)
    z, tap, idx, w, dd, pixels = _step()
    every = z[tap]  # (M, T, C): every tap's value
    out = depthwise(z, tap, w, np.empty(dd.shape, np.float32))
    np.testing.assert_allclose(out, np.einsum("mtc,tc->mc", every, w), rtol=1e-5, atol=1e-5)
    grad = depthwise_grad(z, tap, dd)
    np.testing.assert_allclose(grad, np.einsum("mtc,mc->tc", every, dd), rtol=1e-5, atol=1e-5)
    want = np.zeros((pixels, dd.shape[1]), np.float64)
    np.add.at(want, tap.ravel(), (dd[:, None, :].astype(np.float64) * w[None]).reshape(-1, 21))
    got = pixel_grad(tap, idx, dd, w, pixels)
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-5, atol=1e-5)  # row 0: the padding


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_no_cut_of_the_channels_changes_a_bit(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = _step(1)
    whole = _kernels(*step)
    monkeypatch.setattr(soft_rounding, "MIN_CHUNK", 1)
    monkeypatch.setattr(soft_rounding, "threads", lambda: threads)
    assert _kernels(*step) == whole
    monkeypatch.setattr(block_taps, "NATIVE", False)
    assert _kernels(*step) == whole


@pytest.mark.parametrize(("positions", "taps"), [(256, 25), (255, 16)])
def test_c_and_numpy_give_the_same_bits(
    positions: int, taps: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """csrc/block_taps.c does numpy's float32 operations in numpy's order, on a lite0-sized
    step (256 positions x 25 taps over 700 pixels, 1152 channels), and on one whose taps and
    positions are not whole fours after the first (the C's register sums, and what is left)."""
    assert native.library() is not None
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 400, positions)
    table = np.stack([rng.permutation(np.arange(1, 700))[:400] for _ in range(taps)], 1)
    tap = table[idx]
    z, w, dd = (
        rng.standard_normal(s).astype(np.float32)
        for s in [(700, 1152), (taps, 1152), (positions, 1152)]
    )
    c = _kernels(z, tap, idx, w, dd, 700)
    monkeypatch.setattr(block_taps, "NATIVE", False)
    assert _kernels(z, tap, idx, w, dd, 700) == c


@pytest.mark.parametrize("fuse", ["NONE", "RELU", "RELU6"])
@pytest.mark.parametrize("grid", [None, (0.05, -128), (0.0371, 3)])
def test_the_fused_quant_in_c_is_numpys_bit_for_bit(
    fuse: str, grid: tuple[float, int] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values around every bound and rounding tie, signed zeros, infinities and NaN; the
    derivative as float32 and as bool, each element cut over 3 threads."""
    rng = np.random.default_rng(4)
    edges = [0.0, 6.0, -6.4, 6.35, 12.75, 0.025, 0.075, -4.7861, 4.9]
    near = [np.nextafter(np.float32(e), np.float32(d)) for e in edges for d in (-np.inf, np.inf)]
    odd = [-0.0, 0.0, np.inf, -np.inf, np.nan, *edges, *near]
    y = np.concatenate([np.array(odd, np.float32), rng.standard_normal(5000) * 5]).astype(
        np.float32
    )
    monkeypatch.setattr(soft_rounding, "MIN_CHUNK", 1)
    monkeypatch.setattr(soft_rounding, "threads", lambda: 3)
    for dtype in (np.float32, np.bool_):
        into = (np.empty_like(y), np.empty(y.shape, dtype))
        c = [a.tobytes() for a in fused_quant(y, fuse, grid, into)]
        monkeypatch.setattr(block_taps, "NATIVE", False)
        into = (np.empty_like(y), np.empty(y.shape, dtype))
        assert [a.tobytes() for a in fused_quant(y, fuse, grid, into)] == c
        monkeypatch.setattr(block_taps, "NATIVE", True)


def test_the_kernels_are_picked_for_the_cpus_vector_width() -> None:
    """On x86-64 each kernel is an ifunc over its AVX-512, AVX2 and baseline builds (GCC's
    target_clones); the tests above hold whichever the CPU runs to numpy's bits."""
    kinds = symbol_kinds()
    for name in ("dw", "dw_grad", "pixel_grad", "fused_quant"):
        assert kinds[f"mdla_block_{name}_f32"] == "i"  # resolved when loaded


def test_the_pixel_gradient_masked_in_place_is_the_sum_times_the_mask() -> None:
    """The expand's derivative (bool) applied with the sums, into a reused array holding
    garbage: numpy's g *= mask on the fresh sums, bit for bit (a -0.0 where a negative sum
    meets a 0 of the mask)."""
    _, tap, idx, w, dd, pixels = _step(2)
    mask = np.random.default_rng(8).random((pixels, dd.shape[1])) < 0.5
    want = pixel_grad(tap, idx, dd, w, pixels)
    want *= mask
    into = np.full((pixels, dd.shape[1]), np.inf, np.float32)
    got = pixel_grad(tap, idx, dd, w, pixels, mask, into)
    assert got is into
    assert got[1:].tobytes() == want[1:].tobytes()
    assert np.signbit(got[1:][~mask[1:]]).any()  # the -0.0s are there, as numpy's
