"""Data-free weight choices: the MSE clipping scale and balanced (SQuant-style) rounding."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir import OpKind
from mdla_quant import run_int8
from mdla_quant.config import QuantConfig
from mdla_quant.errors import QuantError
from mdla_quant.quantize import quantize
from mdla_quant.weight_fit import (
    _balance_kernels,
    balanced,
    fit_weights,
    from_units,
    mse_amax,
    units,
)
from mdla_quant.weights import quantize_weights
from tests.quant.native_symbols import symbol_kinds

from .test_quantize import net, samples

Array = np.ndarray[Any, Any]


def _scale(params: Any, shape: tuple[int, ...], dim: int) -> Array:
    view = [1] * len(shape)
    view[dim] = -1
    return np.asarray(params.scale, np.float32).astype(np.float64).reshape(view)


def _sq_err(w: Array, q: Array, s: Array, dim: int) -> Array:
    axes = tuple(a for a in range(w.ndim) if a != dim)
    return ((q.astype(np.float64) * s - w.astype(np.float64)) ** 2).sum(axes)


def test_max_and_nearest_are_quantize_weights_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    for kind, shape, dim in (
        (OpKind.CONV_2D, (6, 3, 3, 5), 0),
        (OpKind.DEPTHWISE_CONV_2D, (1, 3, 3, 7), 3),
        (OpKind.FULLY_CONNECTED, (4, 9), 0),
    ):
        w = rng.standard_normal(shape).astype(np.float32)
        q, p = fit_weights(kind, w, dim, None)
        q0, p0 = quantize_weights(w, dim)
        assert q.tobytes() == q0.tobytes()
        assert p == p0


def test_mse_scale_never_worse_and_clips_a_heavy_tail() -> None:
    """At 8 bits a clip pays off only on a long row whose max stands a little apart: 4095
    weights uniform in [-1, 1] and one at 1.03 (clip to ~1: +0.0009 of clip error, -0.0013 of
    rounding error); one weight at 3 among 64 Gaussians must keep the max."""
    rng = np.random.default_rng(0)
    w = rng.uniform(-1, 1, (8, 4096)).astype(np.float32)
    w[:4, 0] = 1.03
    w[4:, 64:] = 0.0
    w[4:, :64] = rng.standard_normal((4, 64))
    w[4:, 0] = 3.0
    q0, p0 = quantize_weights(w, 0)
    q1, p1 = fit_weights(OpKind.FULLY_CONNECTED, w, 0, None, scale="mse")
    e0 = _sq_err(w, q0, _scale(p0, w.shape, 0), 0)
    e1 = _sq_err(w, q1, _scale(p1, w.shape, 0), 0)
    assert np.all(e1 <= e0 * (1 + 1e-6))
    assert np.all(e1[:4] < 0.985 * e0[:4])  # 2-4 % less
    assert all(a < b for a, b in zip(p1.scale[:4], p0.scale[:4], strict=True))
    assert p1.scale[4:] == p0.scale[4:]
    assert np.abs(q1).max() == 127


def test_mse_amax_keeps_an_exact_grid_and_a_zero_channel() -> None:
    w = np.zeros((2, 5), np.float32)
    w[0] = np.array([-127, -3, 0, 5, 127], np.float32) * 0.25  # exactly on max's grid
    assert list(mse_amax(w, 0)) == [127 * 0.25, 0.0]


def test_bias_floor_still_raises_the_mse_scale() -> None:
    w = np.random.default_rng(1).laplace(size=(3, 32)).astype(np.float32)
    floor = np.array([0.0, 1.0, 0.0])
    _, p = fit_weights(OpKind.FULLY_CONNECTED, w, 0, floor, scale="mse")
    assert p.scale[1] == pytest.approx(1.0)
    assert p.scale[0] < 1.0


def test_units_round_trip_each_layout() -> None:
    rng = np.random.default_rng(2)
    for kind, shape, o, k in (
        (OpKind.CONV_2D, (5, 3, 2, 4), 5, 4),
        (OpKind.TRANSPOSE_CONV_2D, (5, 3, 2, 4), 5, 4),
        (OpKind.DEPTHWISE_CONV_2D, (1, 3, 3, 6), 6, 1),
        (OpKind.FULLY_CONNECTED, (3, 7), 3, 7),
    ):
        w = rng.standard_normal(shape)
        view, order = units(kind, w)
        assert view.shape[:2] == (o, k)
        assert np.array_equal(from_units(view, shape, order), w)


def test_kernel_step_leaves_each_kernel_sum_within_half() -> None:
    x = np.random.default_rng(4).uniform(-20, 20, (500, 9))
    near = np.clip(np.round(x), -127, 127).astype(np.int16)
    assert np.abs((near - x).sum(1)).max() > 1.0  # the case exists before
    q = _balance_kernels(x, near)
    assert np.abs((q - x).sum(1)).max() <= 0.5 + 1e-9
    assert np.abs(q - near).max() <= 1


def _tied_rows(seed: int, rows: int, n: int) -> tuple[Array, Array]:
    """x on a quarter-step grid (many equal errors in a row, and sums on x.5) with values past
    +-127 (codes at the clip, which may not flip outward), and their round to nearest."""
    x = np.random.default_rng(seed).integers(-130 * 4, 130 * 4, (rows, n)) / 4.0
    x[::7] = np.round(x[::7]) + 0.25  # rows whose errors are all equal
    near = np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), -127, 127).astype(np.int16)
    return x, near


@pytest.mark.parametrize("n", [1, 2, 9, 25, 49])
def test_kernel_step_in_c_gives_numpys_codes(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The C pass flips the same elements as numpy's repeated argmax: equal keys to the lower
    index, no flip outward from +-127, fewer flips where a row has fewer candidates."""
    from mdla_quant import native

    assert native.library() is not None  # else both runs below are numpy's
    calls = []
    lib = native.library()

    class Spy:
        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(lib, name)

    x, near = _tied_rows(n, 4000, n)
    monkeypatch.setattr("mdla_quant.weight_fit.library", lambda: Spy())
    got = _balance_kernels(x, near)
    assert calls == ["mdla_balance_kernels"]
    monkeypatch.setattr("mdla_quant.weight_fit.library", lambda: None)
    want = _balance_kernels(x, near)
    assert got.dtype == want.dtype == np.int16
    assert np.array_equal(got, want)
    if n > 1:
        assert (got != near).any()


def test_balanced_cancels_a_constant_inputs_error_per_channel() -> None:
    """A conv on a constant input sees s * sum(e) per output channel: balanced rounding holds it
    within half a step, round to nearest does not; each weight moves at most one step."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((32, 3, 3, 16)).astype(np.float32)
    q0, p = quantize_weights(w, 0)
    q1, p1 = fit_weights(OpKind.CONV_2D, w, 0, None, rounding="balanced")
    assert p1 == p
    s = _scale(p, w.shape, 0)
    err0 = np.abs(((q0 * s) - w).sum((1, 2, 3)) / s.ravel())
    err1 = np.abs(((q1 * s) - w).sum((1, 2, 3)) / s.ravel())
    assert err0.max() > 1.0
    assert err1.max() <= 0.5 + 1e-6
    assert np.abs(q1.astype(np.int16) - q0).max() == 1
    assert q1.dtype == np.int8


def test_balanced_never_leaves_int8_range() -> None:
    x = np.full((1, 1, 6), 126.9)  # every weight at the top: flips up impossible
    x[0, 0, :3] = -126.9
    q = balanced(x, np.clip(np.round(x), -127, 127))
    assert q.min() >= -127
    assert q.max() <= 127


def test_quantize_with_weight_choices_runs_and_records() -> None:
    data = samples(4)
    config = QuantConfig(weight_scale="mse", weight_rounding="balanced")
    q = quantize(net(), data, config)
    base = quantize(net(), data, QuantConfig(weight_rounding="nearest"))
    assert q.provenance.quant is not None
    assert (q.provenance.quant.weight_scale, q.provenance.quant.weight_rounding) == (
        "mse",
        "balanced",
    )
    assert not np.array_equal(q.const("w2"), base.const("w2"))
    out, ref = run_int8(q, data[0]), run_int8(base, data[0])
    assert all(a.shape == b.shape for a, b in zip(out, ref, strict=True))


@pytest.mark.parametrize("field", ["weight_scale", "weight_rounding"])
def test_unknown_weight_choice_is_one_clear_error(field: str) -> None:
    with pytest.raises(QuantError, match=f"unknown {field} `sq`: expected one of"):
        QuantConfig(**{field: "sq"})


def test_the_default_rounds_mean_and_says_so() -> None:
    data = samples(4)
    default = quantize(net(), data)
    mean_q = quantize(net(), data, QuantConfig(weight_rounding="mean"))
    near = quantize(net(), data, QuantConfig(weight_rounding="nearest"))
    assert default.provenance.quant is not None
    assert default.provenance.quant.weight_rounding == "mean"
    for name in ("w", "b", "w2", "b2"):
        assert np.array_equal(default.const(name), mean_q.const(name))
    assert not np.array_equal(default.const("b"), near.const("b"))  # the shifted bias


@pytest.mark.parametrize("rounding", ["kernel", "balanced", "weighted"])
@pytest.mark.parametrize(
    ("kind", "shape", "dim"),
    [
        (OpKind.CONV_2D, (70, 3, 3, 40), 0),
        (OpKind.DEPTHWISE_CONV_2D, (1, 5, 5, 48), 3),
        (OpKind.FULLY_CONNECTED, (30, 50), 0),
        (OpKind.CONV_2D, (8, 3, 3, 5), None),
    ],
)
def test_fit_weights_divides_by_the_scale_per_pass_as_on_the_whole(
    kind: OpKind, shape: tuple[int, ...], dim: int | None, rounding: str
) -> None:
    """The values rounded are divided by their channel's scale a pass at a time: the codes of
    the whole tensor divided first (the straightforward form), per channel and per tensor."""
    rng = np.random.default_rng(11)
    view = [1] * len(shape)
    view[dim if dim is not None else 0] = -1
    spread = rng.uniform(0.1, 3.0, shape[dim if dim is not None else 0]).reshape(view)
    w = (rng.standard_normal(shape) * spread).astype(np.float32)
    k = units(kind, w)[0].shape[1]  # kernels per output channel: the moments' channels
    moments = (rng.uniform(0, 2, k), rng.uniform(0, 1, k)) if rounding == "weighted" else None
    got, params = fit_weights(kind, w, dim, None, rounding=rounding, moments=moments)
    q, p = quantize_weights(w, dim)
    s = np.asarray(p.scale, np.float32).astype(np.float64).reshape(view if dim is not None else -1)
    x, order = units(kind, w.astype(np.float64) / s)
    near, _ = units(kind, q)
    want = from_units(balanced(x, near, rounding, moments), w.shape, order)
    assert params == p
    assert np.array_equal(got, want)
    assert (got != q).any() or (kind, rounding) == (OpKind.FULLY_CONNECTED, "kernel")


@pytest.mark.parametrize("rounding", ["kernel", "mean"])
@pytest.mark.parametrize("scale", ["max", "mse"])
@pytest.mark.parametrize(
    ("kind", "shape", "dim"),
    [
        (OpKind.CONV_2D, (24, 3, 3, 40), 0),
        (OpKind.CONV_2D, (16, 7, 7, 3), 0),
        (OpKind.CONV_2D, (12, 12, 12, 2), 0),  # 144 elements a kernel: numpy's split sum
        (OpKind.CONV_2D, (20, 1, 1, 64), 0),
        (OpKind.DEPTHWISE_CONV_2D, (1, 5, 5, 48), 3),
        (OpKind.FULLY_CONNECTED, (30, 50), 0),
        (OpKind.CONV_2D, (8, 3, 3, 5), None),
    ],
)
def test_the_kernel_step_in_one_c_pass_gives_numpys_codes(
    kind: OpKind,
    shape: tuple[int, ...],
    dim: int | None,
    scale: str,
    rounding: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`kernel` and `mean` fit from the float32 weights in one C pass: the codes and params of
    quantize_weights + balanced (numpy's path), bit for bit, on weights whose quotients sit on
    a quarter-step grid (ties at x.5 in the codes and in the kernel sums) and past the clip,
    with a bias floor raising some scales; and the C pass is what ran."""
    from mdla_quant import native

    lib = native.library()
    assert lib is not None  # else both runs below are numpy's
    rng = np.random.default_rng(sum(shape))
    w = (rng.integers(-140 * 4, 140 * 4, shape) / 4.0).astype(np.float32)
    o = shape[dim] if dim is not None else 1
    view = [1] * len(shape)
    view[dim if dim is not None else 0] = -1
    w = w * rng.choice([0.5, 1.0, 2.0], o).reshape(view).astype(np.float32)
    floor = np.where(np.arange(o) % 3 == 0, 3.0, 0.0) if dim is not None else None
    calls = []

    class Spy:
        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(lib, name)

    monkeypatch.setattr("mdla_quant.weight_fit.library", lambda: Spy())
    got, params = fit_weights(kind, w, dim, floor, scale, rounding)
    assert calls == ["mdla_fit_kernels_f32"]
    monkeypatch.setattr("mdla_quant.weight_fit.library", lambda: None)
    want, want_params = fit_weights(kind, w, dim, floor, scale, rounding)
    assert params == want_params
    assert got.dtype == want.dtype == np.int8
    assert np.array_equal(got, want)
    q, _ = quantize_weights(w, dim, floor)
    if units(kind, w)[0].shape[2] > 1:
        assert (got != q).any()  # flips happened


def test_the_kernel_step_leaves_a_non_finite_quotient_to_numpy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scale that underflows float32 divides a weight to an infinity: C gives it back to
    numpy's path, whose result stands."""
    w = np.zeros((2, 3, 3, 4), np.float32)
    w[0, 0, 0, 0] = 1e-45  # amax / 127 is 0 in float32
    w[1] = np.linspace(-1, 1, 36, dtype=np.float32).reshape(3, 3, 4)
    from mdla_quant.weight_fit import _kernel_step_in_c

    with np.errstate(all="ignore"):
        assert _kernel_step_in_c(OpKind.CONV_2D, w, 0, None, None) is None
        got, params = fit_weights(OpKind.CONV_2D, w, 0, None, "max", "mean")
        monkeypatch.setattr("mdla_quant.weight_fit.library", lambda: None)
        want, want_params = fit_weights(OpKind.CONV_2D, w, 0, None, "max", "mean")
    assert params == want_params
    assert got.dtype == np.int8
    assert np.array_equal(got, want)


@pytest.mark.parametrize(("need", "flipped"), [(1, [0, 1, 1, 0]), (2, [0, 0, 1, 0])])
def test_the_c_flips_take_an_infinite_error_first_and_never_flip_it(
    need: int, flipped: list[int]
) -> None:
    """numpy's repeated argmax picks an infinite error first and its finiteness test refuses
    the flip: the C flips do the same, whether the row needs one flip (their one-pass form)
    or more."""
    from mdla_quant import native

    lib = native.library()
    assert lib is not None
    e = np.array([np.inf, 0.4, 0.3, -0.2])
    q = np.array([0, 1, 1, 0], np.int16)
    wants = np.array([need], np.int64)
    taken = np.empty(4, np.uint8)
    lib.mdla_balance_kernels(e.ctypes, q.ctypes, wants.ctypes, 1, 4, taken.ctypes)
    assert q.tolist() == flipped


def test_the_kernel_steps_quotients_are_picked_for_the_cpus_vector_width() -> None:
    """On x86-64 the kernel step's quotients and codes (mdla_fit_codes_f32) are an ifunc over
    their AVX2 and baseline builds; the equality tests above hold whichever the CPU runs to
    numpy's codes, and its rows stay one baseline build (which AVX2 made slower)."""
    kinds = symbol_kinds()
    assert kinds["mdla_fit_codes_f32"] == "i"
    assert kinds["mdla_fit_kernels_f32"] != "i"
