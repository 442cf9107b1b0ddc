"""`mdla_quant.winograd`: the stride-1 3x3 convolution by F(4x4, 3x3) is the convolution to
within float32 rounding, bounded per tensor against the exact (float64) sum on random layers,
and on a real model's layers against the float32 convolution calibration ran before: the
largest difference and the shift of each output's range (what calibration reads), relative to
that range. Its kept buffers give the same values as fresh ones, whatever shapes come between.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from mdla_ir import OpKind, evaluate
from mdla_ir.attrs import ConvAttrs
from mdla_ir.interp.conv import conv2d_nhwc, windows
from mdla_quant import native, winograd
from mdla_quant.winograd import Scratch, conv3x3, filter_transform
from tests.models import inputs_for, legalized

Array = np.ndarray[Any, Any]

# Measured: 0.7e-6 to 7e-6 of the range on these and on ResNet-18's layers; float32's own
# rounding of the direct sum is about 1e-7 of it.
BOUND = 2e-5

# (x shape NHWC, output channels, padding (t, b, l, r))
CASES = [
    ((1, 8, 8, 4), 4, (1, 1, 1, 1)),
    ((2, 13, 10, 7), 5, (1, 1, 1, 1)),  # blocks hanging over both edges, a batch
    ((1, 9, 11, 3), 6, (0, 1, 1, 0)),  # TFLite's SAME for an even size: asymmetric
    ((1, 6, 7, 16), 8, (0, 0, 0, 0)),  # unpadded: 4x5 outputs
    ((1, 3, 3, 2), 1, (2, 2, 2, 2)),
    ((1, 28, 28, 64), 64, (1, 1, 1, 1)),
]


def exact(x: Array, w: Array, bias: Array | None, padding: Sequence[int]) -> Array:
    """The convolution in float64."""
    t, b, left, r = padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (t, b), (left, r), (0, 0)))
    y = np.einsum("nhwcij,kijc->nhwk", windows(xp, (3, 3), (1, 1), (1, 1)), w.astype(np.float64))
    return y if bias is None else y + bias


def layer(case: tuple[Any, ...], seed: int) -> tuple[Array, Array, Array]:
    xs, k, _ = case
    rng = np.random.default_rng(seed)
    x = np.maximum(rng.standard_normal(xs), 0).astype(np.float32)  # a ReLU's output
    w = (rng.standard_normal((k, 3, 3, xs[3])) / np.sqrt(9 * xs[3])).astype(np.float32)
    return x, w, rng.standard_normal(k).astype(np.float32)


def shift(got: Array, want: Array) -> tuple[float, float]:
    """The largest difference, and the larger move of the min or the max, over want's range."""
    span = float(want.max() - want.min())
    moved = max(abs(float(got.min() - want.min())), abs(float(got.max() - want.max())))
    return float(np.abs(got - want).max()) / span, moved / span


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_winograd_is_the_convolution_to_float32_rounding(
    case: tuple[Any, ...], with_bias: bool
) -> None:
    assert native.library() is not None
    x, w, b = layer(case, len(case[0]) + case[1])
    bias = b if with_bias else None
    padding = case[2]
    got = conv3x3(x, filter_transform(w), bias, padding)
    assert got is not None
    want = exact(x, w, bias, padding)
    assert got.shape == want.shape
    assert got.dtype == np.float32
    largest, moved = shift(got, want)
    assert max(largest, moved) < BOUND


def test_kept_buffers_give_fresh_buffers_values() -> None:
    """Two paddings of one padded shape, other shapes between: the same values as unkept."""
    scratch = Scratch()
    a = (np.ones((1, 8, 8, 4), np.float32), (1, 1, 1, 1))
    b = (np.full((1, 8, 8, 4), 2, np.float32), (2, 0, 2, 0))  # the same padded shape
    c = (np.ones((1, 5, 9, 4), np.float32), (1, 1, 1, 1))
    u = filter_transform(np.ones((3, 3, 3, 4), np.float32))
    for x, padding in [a, b, c, a, b, a]:
        kept = conv3x3(x, u, None, padding, scratch)
        fresh = conv3x3(x, u, None, padding)
        assert kept is not None
        assert fresh is not None
        assert kept.tobytes() == fresh.tobytes()


def test_the_filter_transform_in_c_is_numpys(monkeypatch: pytest.MonkeyPatch) -> None:
    """G g G^T in float64 both ways, each rounded once: equal up to the float64 sums' order."""
    w = np.random.default_rng(5).standard_normal((24, 3, 3, 40)).astype(np.float32)
    in_c = filter_transform(w)
    monkeypatch.setattr(winograd, "library", lambda: None)
    in_numpy = filter_transform(w)
    assert in_c.shape == in_numpy.shape == (36, 40, 24)
    assert in_c.dtype == in_numpy.dtype == np.float32
    np.testing.assert_allclose(in_c, in_numpy, rtol=1e-7, atol=1e-7)
    want = np.einsum("ai,kijc,bj->abck", winograd.G, w.astype(np.float64), winograd.G)
    np.testing.assert_allclose(in_c, want.reshape(36, 40, 24), rtol=1e-6, atol=1e-7)


def test_without_the_library_there_is_no_winograd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(winograd, "library", lambda: None)
    x, w, b = layer(CASES[0], 0)
    assert conv3x3(x, filter_transform(w), b, (1, 1, 1, 1)) is None


def test_on_resnet18s_layers_the_ranges_move_within_the_bound() -> None:
    """Each 3x3 stride-1 conv of ResNet-18 on a photo's activations: Winograd against the
    interpreter's float32 direct convolution (what calibration computed before)."""
    graph, _ = legalized("resnet18")
    convs = [
        op
        for op in graph.ops
        if op.kind is OpKind.CONV_2D
        and graph.tensors[op.inputs[1]].shape[1:3] == (3, 3)
        and ConvAttrs.of(op).stride == (1, 1)
    ]
    inputs = {op.inputs[0] for op in convs}
    seen: dict[str, Array] = {}
    x = inputs_for("resnet18", 1, seed=0)[0]
    evaluate(graph, x, keep=(), observe=lambda n, v: seen.update({n: v}) if n in inputs else None)
    assert len(convs) == 13  # 56x56x64 to 7x7x512
    for op in convs:
        a = ConvAttrs.of(op)
        x, w, b = seen[op.inputs[0]], graph.const(op.inputs[1]), graph.const(op.inputs[2])
        want = conv2d_nhwc(x, w, b, a.stride, a.dilation, a.padding, 1)
        got = conv3x3(x, filter_transform(w), b, a.padding)
        assert got is not None
        largest, moved = shift(got, want)
        assert max(largest, moved) < BOUND, (op.name, largest, moved)


def _bits_equal(a: Array, b: Array) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("case", CASES[:5])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("poisoned", [False, True])
def test_the_fused_relu_is_numpys_maximum_bit_for_bit(
    case: tuple[Any, ...], with_bias: bool, poisoned: bool
) -> None:
    """relu=True gives np.maximum(y, 0) of the unfused y bit for bit: odd channel counts (the
    vector loop's tails), blocks hanging over the edges, a -0 bias, and (poisoned) NaNs of
    both signs and an infinity in the input (a NaN output stays that NaN)."""
    x, w, b = layer(case, 11)
    x = x - np.float32(0.5)  # negative outputs too
    if poisoned:
        x[0, 0, 0, 0], x[0, -1, -1, -1], x[0, x.shape[1] // 2, 0, 0] = np.nan, -np.nan, np.inf
    b[::2] = -0.0
    bias = b if with_bias else None
    u = filter_transform(w)
    with np.errstate(invalid="ignore"):
        plain = conv3x3(x, u, bias, case[2])
        fused = conv3x3(x, u, bias, case[2], relu=True)
        assert plain is not None
        assert fused is not None
        assert np.isnan(plain).any() if poisoned else (plain < 0).any()
        assert _bits_equal(fused, np.maximum(plain, 0))


def test_the_fused_relu_on_the_edge_values() -> None:
    """The output transform alone, on products that make each output one chosen value: -0,
    +0, NaNs of either sign, the infinities, the smallest subnormals, a float's extremes."""
    lib = native.library()
    assert lib is not None
    values = np.array(
        [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 3.0, -3.0, 3.4e38, -3.4e38],
        np.float32,
    )
    k = values.size  # one output channel per value, not a multiple of the vector width
    m = np.full((36, 1, k), -0.0, np.float32)  # -0 elsewhere: y[0][0] = m[0] exactly
    m[0, 0] = values
    for relu in (0, 1):
        y = np.empty((1, 4, 4, k), np.float32)
        assert lib.mdla_wino43_output_f32(m.ctypes, 1, 1, 1, k, None, 4, 4, y.ctypes, relu) == 0
        if not relu:
            plain = y.copy()
            assert _bits_equal(plain[0, 0, 0], values)
    with np.errstate(invalid="ignore"):
        assert _bits_equal(y, np.maximum(plain, 0))
    assert not np.signbit(y[0, 0, 0, 0])  # -0 became +0, as numpy's maximum makes it
