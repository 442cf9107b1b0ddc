"""The float interpreter's copy-saving forms compute the definition's values bit for bit.

Each form is held against the formulation it replaced, written out here: a 1x1 conv's product
without the im2col copy, padding without np.pad, depthwise taps multiplied into one reused
buffer, fused activations written in place, a max pool's max by window offsets, the logistic
in two buffers and `round_half_away` in one.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdla_ir import Op, OpKind
from mdla_ir.affine import round_half_away
from mdla_ir.interp import conv
from mdla_ir.interp.conv import conv2d_nhwc, depthwise_nhwc, pad_nhwc, windows
from mdla_ir.interp.elementwise import binary, sigmoid
from mdla_ir.interp.pool import window_max
from mdla_ir.interp.registry import apply_fuse
from mdla_ir.interp.resample import _bilinear_axis, resize_bilinear


def im2col_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """The general path's product for a 1x1, stride-1, unpadded conv: patches copied first."""
    o, kh, kw, c = w.shape
    patches = windows(x, (kh, kw), (1, 1), (1, 1))
    n, oh, ow = patches.shape[:3]
    cols = patches.transpose(0, 1, 2, 4, 5, 3).reshape(n * oh * ow, kh * kw * c)
    out = np.empty((n, oh, ow, o), np.float32)
    out[...] = (cols @ w.reshape(o, -1).T).reshape(n, oh, ow, o)
    if bias is not None:
        out += bias.astype(np.float32)
    return out


@pytest.mark.parametrize("shape", [(1, 7, 7, 320), (2, 14, 9, 24), (1, 1, 1, 1280)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_pointwise_conv_is_the_im2col_product(shape: tuple[int, ...], with_bias: bool) -> None:
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((48, 1, 1, shape[-1])).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32) if with_bias else None
    got = conv2d_nhwc(x, w, b, (1, 1), (1, 1), (0, 0, 0, 0), 1)
    assert got.dtype == np.float32
    assert got.tobytes() == im2col_conv(x, w, b).tobytes()
    strided = x[:, :, ::2]  # a non-contiguous input takes the same product
    got = conv2d_nhwc(strided, w, b, (1, 1), (1, 1), (0, 0, 0, 0), 1)
    assert got.tobytes() == im2col_conv(np.ascontiguousarray(strided), w, b).tobytes()


@pytest.mark.parametrize("padding", [(1, 1, 1, 1), (0, 2, 1, 0), (3, 0, 0, 0)])
@pytest.mark.parametrize("value", [0.0, -np.inf])
def test_padding_is_np_pad(padding: tuple[int, int, int, int], value: float) -> None:
    x = np.random.default_rng(1).standard_normal((2, 5, 4, 3)).astype(np.float32)
    t, b, left, r = padding
    want = np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)), constant_values=value)
    got = pad_nhwc(x, padding, value)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


def depthwise_definition(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    """`out += tap * w` with a fresh product per tap, zero-initialized, as before."""
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    n, hp, wp, c = xp.shape
    oh, ow = (hp - 3) // stride + 1, (wp - 3) // stride + 1
    out = np.zeros((n, oh, ow, c), np.float32)
    for i in range(3):
        for j in range(3):
            out += (
                xp[
                    :,
                    i : i + stride * (oh - 1) + 1 : stride,
                    j : j + stride * (ow - 1) + 1 : stride,
                ]
                * w[0, i, j]
            )
    return out


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("wdtype", [np.float32, np.float64])
def test_depthwise_taps_in_one_buffer_are_the_definition(stride: int, wdtype: type) -> None:
    rng = np.random.default_rng(stride)
    x = rng.standard_normal((2, 9, 11, 16)).astype(np.float32)
    w = rng.standard_normal((1, 3, 3, 16)).astype(wdtype)
    got = depthwise_nhwc(x, w, None, (stride, stride), (1, 1), (1, 1, 1, 1))
    assert got.dtype == np.float32
    assert got.tobytes() == depthwise_definition(x, w, stride).tobytes()


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("wdtype", [np.float32, np.float64])
@pytest.mark.parametrize("budget", [1, 2 * 2 * 11 * 16 * 4, 3 * 2 * 6 * 16 * 4])
def test_depthwise_in_row_blocks_is_the_definition(
    stride: int, wdtype: type, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks of 1, 2 (stride 1: 9 rows in 5 blocks, the last short) and 3 output rows (stride
    2: 5 rows in 2) give every value the whole-output passes' operations in their order."""
    monkeypatch.setattr(conv, "DEPTHWISE_BLOCK_BYTES", budget)
    rng = np.random.default_rng(stride + budget)
    x = rng.standard_normal((2, 9, 11, 16)).astype(np.float32)
    w = rng.standard_normal((1, 3, 3, 16)).astype(wdtype)
    got = depthwise_nhwc(x, w, None, (stride, stride), (1, 1), (1, 1, 1, 1))
    assert got.tobytes() == depthwise_definition(x, w, stride).tobytes()


@pytest.mark.parametrize("fuse", ["NONE", "RELU", "RELU6", "RELU1"])
def test_fused_activation_in_place_is_the_same_values(fuse: str) -> None:
    x = np.random.default_rng(2).standard_normal(1000).astype(np.float32) * 8
    x[:4] = [np.nan, -0.0, np.inf, -np.inf]
    want = apply_fuse(x, fuse)
    owned = x.copy()
    got = apply_fuse(owned, fuse, in_place=True)
    assert got is owned
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("kernel_hw", [(3, 3), (2, 2), (1, 3), (3, 2)])
@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (3, 1)])
def test_window_max_by_offsets_is_the_window_reduction(
    kernel_hw: tuple[int, int], stride: tuple[int, int]
) -> None:
    """Bit for bit, with ties of -0.0 and 0.0, infinities and NaNs among the values."""
    rng = np.random.default_rng(kernel_hw[0] * 10 + stride[0])
    values = np.array([-0.0, 0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 0.25], np.float32)
    for shape in [(2, 9, 8, 5), (1, 3, 3, 2), (1, 12, 7, 1)]:
        x = rng.choice(values, size=shape)
        want = windows(x, kernel_hw, stride, (1, 1)).max(axis=(4, 5))
        got = window_max(x, kernel_hw, stride)
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()
        real = rng.standard_normal(shape).astype(np.float32)  # and plain values
        want = windows(real, kernel_hw, stride, (1, 1)).max(axis=(4, 5))
        assert window_max(real, kernel_hw, stride).tobytes() == want.tobytes()


def definition(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_half_away_in_one_buffer_is_the_definition(dtype: type) -> None:
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**63, 200_000, dtype=np.uint64)
    random = (
        bits.astype(np.uint32).view(np.float32) if dtype is np.float32 else bits.view(np.float64)
    )
    specials = [0.0, -0.0, 0.5, -0.5, 2.5, -2.5, np.nan, -np.nan, np.inf, -np.inf, 2.0**52 + 1]
    halves = (rng.integers(-99, 99, 999) / 2).astype(dtype)
    x = np.concatenate([np.array(specials, dtype), random, -random, halves])
    assert x.dtype == dtype
    with np.errstate(invalid="ignore"):
        got, want = round_half_away(x), definition(x)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


def sigmoid_definition(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(np.float32)


def test_sigmoid_in_buffers_is_the_definition() -> None:
    """Also the NaNs: a negative one and one with a payload come out as the definition's."""
    rng = np.random.default_rng(4)
    specials = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 88.7, -88.7, 104.0, -104.0, 1e-40]
    nans = np.array([0x7FC01234, 0xFFC00042], np.uint32).view(np.float32)
    x = np.concatenate(
        [np.array(specials, np.float32), nans, rng.standard_normal(100_000).astype(np.float32) * 12]
    )
    before = x.copy()
    got = sigmoid(x[::-1])  # a strided view, as a kernel may be given
    assert got.dtype == np.float32
    assert got.tobytes() == sigmoid_definition(x[::-1]).tobytes()
    assert x.tobytes() == before.tobytes()  # the input is left as it was


@pytest.mark.parametrize("x", [np.float32(0.0445), np.asarray(np.float32(-3.0))])
def test_sigmoid_of_a_scalar_is_the_definition(x: np.ndarray) -> None:
    """A global pool's scalar reaches the kernel as a numpy scalar or a 0-d array, for which
    a ufunc returns a scalar that out= cannot take."""
    got = sigmoid(x)
    assert np.asarray(got).tobytes() == sigmoid_definition(np.asarray(x)).tobytes()


def bilinear_definition(x: np.ndarray, oh: int, ow: int, align: bool, half: bool) -> np.ndarray:
    """The horizontal pass taken per output row, as it was."""
    h, w = x.shape[1:3]
    y0, y1, dy = _bilinear_axis(h, oh, align, half)
    x0, x1, dx = _bilinear_axis(w, ow, align, half)
    dy, dx = dy[None, :, None, None], dx[None, None, :, None]
    r0, r1 = x[:, y0], x[:, y1]
    top = r0[:, :, x0] * (1 - dx) + r0[:, :, x1] * dx
    bottom = r1[:, :, x0] * (1 - dx) + r1[:, :, x1] * dx
    return (top * (1 - dy) + bottom * dy).astype(np.float32)


@pytest.mark.parametrize(("align", "half"), [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize(("oh", "ow"), [(23, 17), (4, 3), (7, 7)])
def test_bilinear_rows_interpolated_once_are_the_definition(
    align: bool, half: bool, oh: int, ow: int
) -> None:
    x = np.random.default_rng(oh).standard_normal((2, 7, 5, 3)).astype(np.float32)
    x[0, 0, 0, :2] = np.nan, -0.0
    attrs = {"size": (oh, ow), "align_corners": align, "half_pixel_centers": half}
    op = Op(OpKind.RESIZE_BILINEAR, "r", ("x",), ("y",), attrs)  # type: ignore[arg-type]
    with np.errstate(invalid="ignore"):
        (got,) = resize_bilinear(op, [x], "NHWC")
        want = bilinear_definition(x, oh, ow, align, half)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("kind", [OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.DIV])
@pytest.mark.parametrize("fuse", ["NONE", "RELU", "RELU6"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_keeps_its_fresh_result_and_the_operands(
    kind: OpKind, fuse: str, dtype: type
) -> None:
    """The float32 result is the ufunc's own array, activated in place: the values of
    activate(op(a, b)).astype(float32), with broadcasting, the operands untouched; a 0-d
    pair gives what it gave (a numpy float32 scalar)."""
    rng = np.random.default_rng(len(fuse))
    a = (rng.standard_normal((2, 5, 7, 3)) * 8).astype(dtype)
    b = (rng.standard_normal((1, 1, 7, 3)) * 8).astype(dtype)
    a.reshape(-1)[:3] = np.nan, -0.0, np.inf
    before = a.tobytes(), b.tobytes()
    op = Op(kind, "o", ("a", "b"), ("y",), {"fuse": fuse})
    ufunc = {OpKind.ADD: np.add, OpKind.SUB: np.subtract, OpKind.MUL: np.multiply}.get(
        kind, np.divide
    )
    with np.errstate(all="ignore"):
        (got,) = binary(op, [a, b], "NHWC")
        want = apply_fuse(ufunc(a, b).astype(np.float32), fuse)
        (scalar,) = binary(op, [a[0, 0, 0, 0], b[0, 0, 0, 0]], "NHWC")
    assert got.dtype == np.float32
    assert got.tobytes() == want.tobytes()
    assert (a.tobytes(), b.tobytes()) == before
    assert type(scalar) is np.float32
    assert np.asarray(scalar).tobytes() == np.asarray(want.reshape(-1)[0]).tobytes()


@pytest.mark.parametrize(
    ("shape", "o", "k", "stride"),
    [((1, 56, 56, 64), 64, 3, 1), ((2, 97, 41, 32), 48, 3, 1), ((1, 224, 224, 3), 64, 7, 2)],
)
def test_conv_in_row_blocks_is_the_whole_product(
    monkeypatch: pytest.MonkeyPatch, shape: tuple[int, ...], o: int, k: int, stride: int
) -> None:
    """resnet18's first 3x3 layer, a batch with a short last block, its 7x7 stride-2 stem:
    the im2col rows multiplied block by block give the whole matrix's product: bit for bit
    where numpy's SGEMM gives a row the same sum wherever it sits in the matrix (OpenBLAS's
    AVX-512 kernels), within float32 rounding where it does not (its AVX2 kernels sum a row
    by its position within a 12-row tile, checked by `_sgemm_rows_move`)."""
    rng = np.random.default_rng(o + k)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((o, k, k, shape[3])).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    args = (x, w, b, (stride, stride), (1, 1), (k // 2,) * 4, 1)
    n, h, wd = shape[:3]
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    assert len(conv._row_blocks(n, oh, ow, o, k * k * shape[3])) > n
    got = conv2d_nhwc(*args)
    monkeypatch.setattr(conv, "IM2COL_WHOLE_BYTES", 1 << 40)
    whole = conv2d_nhwc(*args)
    if _sgemm_rows_move():
        # sums of k*k*c products: their rounding is relative to the largest partial sum
        np.testing.assert_allclose(got, whole, rtol=0, atol=2e-6 * float(np.abs(whole).max()))
    else:
        assert got.tobytes() == whole.tobytes()


def _sgemm_rows_move() -> bool:
    """Whether numpy's SGEMM sums a row differently when it starts the matrix at another
    offset (a block's rows against the same rows inside the whole product)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((400, 147)).astype(np.float32)
    b = rng.standard_normal((147, 64)).astype(np.float32)
    return (a[5:] @ b).tobytes() != (a @ b)[5:].tobytes()


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize(
    ("oh", "ow", "o", "k"),
    [
        (56, 56, 64, 576),
        (112, 112, 64, 147),
        (7, 7, 512, 4608),
        (200, 9, 8, 27),
        (3, 500, 900, 900),
    ],
)
def test_conv_row_blocks_cover_the_output_once_and_stay_large(
    n: int, oh: int, ow: int, o: int, k: int
) -> None:
    blocks = conv._row_blocks(n, oh, ow, o, k)
    if not blocks:
        assert n * oh * ow * k * 4 <= conv.IM2COL_WHOLE_BYTES or oh * ow * o * k < conv.GEMM_MIN_MNK
        return
    for b in range(n):
        rows = [(y0, y1) for i, y0, y1 in blocks if i == b]
        assert [y for y0, y1 in rows for y in range(y0, y1)] == list(range(oh))
        assert all((y1 - y0) * ow * o * k >= conv.GEMM_MIN_MNK for y0, y1 in rows)
