"""`mdla_compile.torch_conv`: calibration's CONV_2D through torch agrees with the interpreter's
to float32 rounding, gives the same bits on 1, 2 and 3 threads, leaves a 1x1 conv and operands
that are not float32 to the interpreter, and is what a compile calibrates with; with each filter
reordered once (`TorchConv`) it gives conv2d's bits."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import mdla_compile
import mdla_compile.compiled
import mdla_quant
from mdla_compile import CompileOptions
from mdla_compile import torch_conv as tc
from mdla_ir.graph import Op
from mdla_ir.interp.conv import conv_2d
from mdla_ir.ops import OpKind
from tests.workbench.conftest import TINY

torch = pytest.importorskip("torch")
Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(7)

# (x shape NHWC, filter (O,KH,KW,C/g), stride, dilation, padding (t,b,l,r), groups, fuse)
CONVS = [
    ((1, 17, 19, 5), (8, 3, 3, 5), (1, 1), (1, 1), (1, 1, 1, 1), 1, "NONE"),
    ((2, 30, 30, 3), (16, 7, 7, 3), (2, 2), (1, 1), (3, 3, 3, 3), 1, "RELU"),
    ((1, 15, 15, 8), (8, 3, 3, 8), (2, 2), (1, 1), (0, 1, 0, 1), 1, "RELU6"),  # TFLite SAME
    ((1, 12, 13, 6), (4, 3, 3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 2, "NONE"),
    ((1, 9, 9, 6), (4, 1, 1, 6), (2, 2), (1, 1), (0, 0, 0, 0), 1, "NONE"),  # 1x1 stride 2
]


def _op(kind: OpKind, stride: Any, dilation: Any, padding: Any, groups: int, fuse: str) -> Op:
    attrs = {"stride": stride, "dilation": dilation, "padding": padding, "fuse": fuse}
    if kind is OpKind.CONV_2D:
        attrs["groups"] = groups
    return Op(kind, "c", ("x", "w", "b"), ("y",), attrs)


def _f32(shape: Sequence[int]) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.fixture
def threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("case", CONVS)
def test_conv_matches_the_interpreter(case: Any) -> None:
    xs, ws, stride, dilation, padding, groups, fuse = case
    op = _op(OpKind.CONV_2D, stride, dilation, padding, groups, fuse)
    args = [_f32(xs), _f32(ws), _f32(ws[:1])]
    want = conv_2d(op, args, "NHWC")[0]
    got = tc.torch_conv_2d(op, args, "NHWC")[0]
    assert got.shape == want.shape
    assert got.dtype == np.float32
    assert got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_same_bits_on_any_thread_count(threads: None) -> None:
    x, w = _f32((1, 56, 56, 64)), _f32((64, 3, 3, 64))
    outs = []
    for n in (1, 2, 3):
        torch.set_num_threads(n)
        outs.append(tc.conv_nhwc(x, w, None, (1, 1), (1, 1), (1, 1, 1, 1), 1).view(np.int32))
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


def test_pointwise_and_other_dtypes_stay_the_interpreters() -> None:
    op = _op(OpKind.CONV_2D, (1, 1), (1, 1), (0, 0, 0, 0), 1, "NONE")
    args = [_f32((1, 8, 8, 16)), _f32((24, 1, 1, 16)), _f32((24,))]
    want = conv_2d(op, args, "NHWC")[0]
    assert np.array_equal(tc.torch_conv_2d(op, args, "NHWC")[0].view(np.int32), want.view(np.int32))
    op3 = _op(OpKind.CONV_2D, (1, 1), (1, 1), (1, 1, 1, 1), 1, "NONE")
    wide = [a.astype(np.float64) for a in (args[0], _f32((4, 3, 3, 16)), _f32((4,)))]
    assert tc.torch_conv_2d(op3, wide, "NHWC")[0].dtype == conv_2d(op3, wide, "NHWC")[0].dtype


def test_no_torch_means_the_interpreters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tc.importlib.util, "find_spec", lambda name: None)
    assert tc.torch_kernels() == {}


def test_a_compile_calibrates_with_them(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def spy(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
        seen.append(op.name)
        return tc.torch_conv_2d(op, args, layout)

    monkeypatch.setattr(mdla_compile.compiled, "torch_kernels", lambda: {OpKind.CONV_2D: spy})
    compiled = mdla_compile.compile(CompileOptions(TINY, calib="random", count=2))
    convs = [op.name for op in compiled.device_graph.ops if op.kind is OpKind.CONV_2D]
    assert convs
    assert sorted(set(seen)) == sorted(convs)
    assert len(seen) == 2 * len(convs)


def test_quantize_runs_the_given_kernels() -> None:
    compiled = mdla_compile.compile(CompileOptions(TINY, calib="random", count=1))
    graph, calib = compiled.device_graph, list(compiled.calibration)

    def doubled(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
        return [2 * conv_2d(op, args, layout)[0]]

    plain = mdla_quant.quantize(graph, calib)
    other = mdla_quant.quantize(graph, calib, kernels={OpKind.CONV_2D: doubled})
    conv = next(op for op in graph.ops if op.kind is OpKind.CONV_2D).outputs[0]
    assert other.tensors[conv].quant != plain.tensors[conv].quant


@pytest.mark.parametrize("case", CONVS)
def test_a_reordered_filter_gives_conv2ds_bits(case: Any) -> None:
    xs, ws, stride, dilation, padding, groups, fuse = case
    op = _op(OpKind.CONV_2D, stride, dilation, padding, groups, fuse)
    args = [_f32(xs), _f32(ws), _f32(ws[:1])]
    want = tc.torch_conv_2d(op, args, "NHWC")[0].view(np.int32)
    conv = tc.TorchConv()
    for _ in range(2):  # the first call reorders the filter, the second reuses it
        got = conv(op, args, "NHWC")[0]
        assert got.dtype == np.float32
        assert got.flags.c_contiguous
        assert np.array_equal(got.view(np.int32), want)


def test_each_filter_is_reordered_once_per_input_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, ...]] = []

    def counted(w: Array, x_shape: Sequence[int], *rest: Any) -> Any:
        calls.append(tuple(x_shape))
        return reorder(w, x_shape, *rest)

    reorder = tc.reorder_filter
    monkeypatch.setattr(tc, "reorder_filter", counted)
    op = _op(OpKind.CONV_2D, (1, 1), (1, 1), (1, 1, 1, 1), 1, "RELU")
    w, b = _f32((8, 3, 3, 4)), _f32((8,))
    conv = tc.TorchConv()
    for _ in range(3):
        conv(op, [_f32((1, 10, 10, 4)), w, b], "NHWC")
    assert calls == [(1, 10, 10, 4)]
    conv(op, [_f32((1, 6, 6, 4)), w, b], "NHWC")  # another input shape: its own layout
    other = w.copy()  # the same values in another array: a filter of its own
    y = conv(op, [x := _f32((1, 10, 10, 4)), other, b], "NHWC")[0]
    assert calls == [(1, 10, 10, 4), (1, 6, 6, 4), (1, 10, 10, 4)]
    want = tc.torch_conv_2d(op, [x, other, b], "NHWC")[0]
    assert np.array_equal(y.view(np.int32), want.view(np.int32))


@pytest.mark.parametrize("where", ["reorder_filter", "packed_conv_nhwc"])
def test_a_torch_whose_internals_differ_falls_back_to_conv2d(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    calls: list[str] = []

    def changed(*args: Any) -> Any:
        calls.append(where)
        raise TypeError("_reorder_convolution_weight(): incompatible function arguments")

    op = _op(OpKind.CONV_2D, (1, 1), (1, 1), (1, 1, 1, 1), 1, "RELU")
    args = [_f32((1, 28, 28, 64)), _f32((64, 3, 3, 64)), _f32((64,))]
    want = tc.torch_conv_2d(op, args, "NHWC")[0].view(np.int32)
    monkeypatch.setattr(tc, where, changed)
    conv = tc.TorchConv()
    for _ in range(3):
        assert np.array_equal(conv(op, args, "NHWC")[0].view(np.int32), want)
    assert calls == [where]  # tried once, then conv2d for good


def test_reordered_filters_give_the_same_bits_on_any_thread_count(threads: None) -> None:
    op = _op(OpKind.CONV_2D, (1, 1), (1, 1), (1, 1, 1, 1), 1, "NONE")
    args = [_f32((1, 28, 28, 64)), _f32((64, 3, 3, 64)), _f32((64,))]
    outs = []
    conv = tc.TorchConv()
    for n in (1, 2, 3):
        torch.set_num_threads(n)
        outs.append(conv(op, args, "NHWC")[0].view(np.int32))
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


def test_the_compile_kernels_reorder_filters() -> None:
    kernels = tc.torch_kernels()
    assert isinstance(kernels[OpKind.CONV_2D], tc.TorchConv)
    assert tc.torch_kernels()[OpKind.CONV_2D] is not kernels[OpKind.CONV_2D]  # one per compile


def test_only_shapes_conv2d_runs_on_onednn_are_reordered() -> None:
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch has no oneDNN")
    big = tc.reorder_filter(_f32((64, 3, 3, 64)), (1, 28, 28, 64), (1, 1, 1, 1), (1, 1), (1, 1), 1)
    assert big is not None
    # torch's own im2col kernel (Slow2d) runs this one: reordered, its sums would round otherwise
    small = tc.reorder_filter(_f32((8, 3, 3, 5)), (1, 19, 21, 5), (0,) * 4, (1, 1), (1, 1), 1)
    assert small is None


# (x shape, filter, stride, dilation, padding, groups): left to oneDNN by `by_winograd`
NOT_WINOGRAD = [
    ((1, 7, 7, 32), (32, 3, 3, 32), (1, 1), (1, 1), (1, 1, 1, 1), 1),  # 49 outputs: too few
    ((1, 30, 30, 16), (16, 3, 3, 16), (2, 2), (1, 1), (1, 1, 1, 1), 1),  # strided
    ((1, 30, 30, 16), (16, 3, 3, 16), (1, 1), (2, 2), (2, 2, 2, 2), 1),  # dilated
    ((1, 30, 30, 16), (16, 3, 3, 8), (1, 1), (1, 1), (1, 1, 1, 1), 2),  # grouped
    ((1, 30, 30, 16), (16, 5, 5, 16), (1, 1), (1, 1), (2, 2, 2, 2), 1),  # 5x5
]


def test_large_3x3_convs_go_by_winograd_and_the_rest_by_onednn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, ...]] = []
    transforms: list[tuple[int, ...]] = []
    real, real_transform = tc.conv3x3, tc.filter_transform

    def spy(x: Array, *rest: Any) -> Any:
        calls.append(x.shape)
        return real(x, *rest)

    def counted(w: Array) -> Array:
        transforms.append(w.shape)
        return real_transform(w)

    monkeypatch.setattr(tc, "conv3x3", spy)
    monkeypatch.setattr(tc, "filter_transform", counted)
    conv = tc.TorchConv(winograd=True)
    op = _op(OpKind.CONV_2D, (1, 1), (1, 1), (0, 1, 1, 0), 1, "RELU")  # 14x14 outputs
    args = [_f32((2, 15, 15, 32)), _f32((16, 3, 3, 32)), _f32((16,))]
    want = tc.torch_conv_2d(op, args, "NHWC")[0]
    for _ in range(2):
        got = conv(op, args, "NHWC")[0]
        assert got.shape == want.shape
        assert got.min() >= 0  # the fused ReLU applied
        assert np.abs(got - want).max() < 2e-5 * np.abs(want).max()
    assert calls == [(2, 15, 15, 32)] * 2
    assert transforms == [(16, 3, 3, 32)]  # once per filter
    for xs, ws, stride, dilation, padding, groups in NOT_WINOGRAD:
        op = _op(OpKind.CONV_2D, stride, dilation, padding, groups, "NONE")
        args = [_f32(xs), _f32(ws), _f32(ws[:1])]
        want = tc.torch_conv_2d(op, args, "NHWC")[0]
        assert np.array_equal(conv(op, args, "NHWC")[0].view(np.int32), want.view(np.int32))
    assert len(calls) == 2


def test_the_compile_kernels_follow_the_winograd_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tc.torch_kernels(winograd=True)[OpKind.CONV_2D].winograd  # type: ignore[attr-defined]
    assert not tc.torch_kernels(winograd=False)[OpKind.CONV_2D].winograd  # type: ignore[attr-defined]
    monkeypatch.setattr(tc, "WINOGRAD", False)
    assert not tc.torch_kernels()[OpKind.CONV_2D].winograd  # type: ignore[attr-defined]
    monkeypatch.setattr(tc, "WINOGRAD", True)
    assert tc.torch_kernels()[OpKind.CONV_2D].winograd  # type: ignore[attr-defined]
    assert not tc.TorchConv().winograd  # bit for bit conv2d's unless asked


def test_a_winograd_conv_applies_its_relu_in_the_output_transform(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A RELU-fused Winograd conv has the ReLU applied as its output is written (no pass of
    `apply_fuse` over it), with the bits of np.maximum over the unfused output; RELU6 keeps
    its own pass."""
    fused: list[str] = []
    real = tc.apply_fuse

    def spy(y: Array, fuse: str, in_place: bool = False) -> Array:
        fused.append(fuse)
        return real(y, fuse, in_place)

    monkeypatch.setattr(tc, "apply_fuse", spy)
    conv = tc.TorchConv(winograd=True)
    args = [_f32((1, 16, 16, 8)), _f32((5, 3, 3, 8)), _f32((5,))]
    plain = conv(_op(OpKind.CONV_2D, (1, 1), (1, 1), (1, 1, 1, 1), 1, "NONE"), args, "NHWC")[0]
    relu = conv(_op(OpKind.CONV_2D, (1, 1), (1, 1), (1, 1, 1, 1), 1, "RELU"), args, "NHWC")[0]
    six = conv(_op(OpKind.CONV_2D, (1, 1), (1, 1), (1, 1, 1, 1), 1, "RELU6"), args, "NHWC")[0]
    assert relu.tobytes() == np.maximum(plain, 0).tobytes()
    assert (plain < 0).any()
    assert six.tobytes() == np.clip(plain, 0, 6).tobytes()
    assert fused == ["NONE", "RELU6"]
