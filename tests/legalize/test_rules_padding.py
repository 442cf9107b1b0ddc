"""Padding rules: PyTorch symmetric pads vs the device's TF-asymmetric SAME."""

from __future__ import annotations

import pytest

from mdla_ir import OpKind
from mdla_ir.testing import GraphBuilder
from mdla_legalize import load_target
from mdla_legalize.rules.padding import (
    conv_pad_to_pad_valid,
    maxpool_pad_to_pad_valid,
    maxpool_pad_to_same_then_subsample,
    pad_into_same_conv,
    same_pads,
)
from mdla_legalize.testing import check_rule

TARGET = load_target("mdla3.5")


@pytest.mark.parametrize(
    ("size", "k", "s", "want"),
    [
        (224, 3, 2, (0, 1)),
        (224, 7, 2, (2, 3)),
        (112, 3, 1, (1, 1)),
        (7, 5, 1, (2, 2)),
        (111, 3, 2, (1, 1)),
        (64, 5, 2, (1, 2)),
        (5, 1, 2, (0, 0)),
    ],
)
def test_tf_same_pads(size: int, k: int, s: int, want: tuple[int, int]) -> None:
    assert same_pads(size, k, s) == want


def _conv(b: GraphBuilder, x: str, cin: int, k: int, s: int, p: int, dw: bool = False) -> str:
    kind = OpKind.DEPTHWISE_CONV_2D if dw else OpKind.CONV_2D
    w = b.const(f"w{len(b.ops)}", (cin, 1, k, k) if dw else (8, cin, k, k))
    return b.op(
        kind,
        [x, w, b.const(f"b{len(b.ops)}", (cin if dw else 8,))],
        stride=(s, s),
        dilation=(1, 1),
        padding=(p, p, p, p),
        groups=1,
        fuse="NONE",
    )


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_stride2_symmetric_conv_becomes_pad_plus_valid(layout: str) -> None:
    b = GraphBuilder(layout=layout)
    shape = (1, 3, 16, 16) if layout == "NCHW" else (1, 16, 16, 3)
    w = b.const("w", (8, 3, 3, 3))  # (O, I, kh, kw) and (O, kh, kw, I) alike
    y = b.op(
        OpKind.CONV_2D,
        [b.input("x", shape), w, b.const("b", (8,))],
        stride=(2, 2),
        dilation=(1, 1),
        padding=(1, 1, 1, 1),
        groups=1,
        fuse="NONE",
    )
    new = check_rule(conv_pad_to_pad_valid, b.build(y), {"PAD": 1}, TARGET)
    assert new.ops[1].attrs.padding == (0, 0, 0, 0)


def test_stride1_same_pads_and_depthwise_stay() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 9, 9))
    y = _conv(b, _conv(b, x, 4, 3, 1, 1, dw=True), 4, 5, 1, 2)
    check_rule(conv_pad_to_pad_valid, b.build(y), {}, TARGET)


def test_explicit_padding_device_keeps_the_pads() -> None:
    b = GraphBuilder()
    y = _conv(b, b.input("x", (1, 4, 16, 16)), 4, 3, 2, 1)
    check_rule(conv_pad_to_pad_valid, b.build(y), {}, TARGET, device="mtk-gpu")


def test_maxpool_after_relu_gets_pad_plus_valid() -> None:
    b = GraphBuilder()
    x = b.op(OpKind.RELU, [b.input("x", (1, 4, 16, 16))])
    y = b.op(
        OpKind.MAX_POOL_2D, [x], kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1), fuse="NONE"
    )
    check_rule(maxpool_pad_to_pad_valid, b.build(y), {"PAD": 1}, TARGET)


def test_maxpool_over_signed_values_keeps_its_pads() -> None:
    b = GraphBuilder()
    y = b.op(
        OpKind.MAX_POOL_2D,
        [b.input("x", (1, 4, 16, 16))],
        kernel=(3, 3),
        stride=(2, 2),
        padding=(1, 1, 1, 1),
        fuse="NONE",
    )
    check_rule(maxpool_pad_to_pad_valid, b.build(y), {}, TARGET)


@pytest.mark.parametrize(
    ("hw", "k", "s", "pads"),
    [
        ((16, 16), 3, 2, (1, 1, 1, 1)),  # the ResNet stem's pool (DPN, CSPResNet: signed input)
        ((15, 12), 3, 2, (1, 1, 1, 1)),
        ((13, 9), 5, 3, (2, 2, 2, 2)),
        ((16, 16), 3, 2, (1, 2, 1, 2)),  # ceil_mode's extra bottom/right pad
    ],
)
def test_maxpool_over_signed_values_pools_at_stride_1_then_picks(
    hw: tuple[int, int], k: int, s: int, pads: tuple[int, int, int, int]
) -> None:
    """The same pixels as PyTorch's padded pool (check_rule compares the float results), with
    device pads only: a stride-1 TF-SAME pool, then a 1x1 pool at the stride."""
    b = GraphBuilder()
    y = b.op(
        OpKind.MAX_POOL_2D,
        [b.input("x", (1, 4, *hw))],
        kernel=(k, k),
        stride=(s, s),
        padding=pads,
        fuse="NONE",
    )
    oh = (hw[0] + pads[0] + pads[1] - k) // s + 1
    ow = (hw[1] + pads[2] + pads[3] - k) // s + 1
    if ((hw[0] - 1) // s + 1, (hw[1] - 1) // s + 1) != (oh, ow):  # counts differ: left alone
        check_rule(maxpool_pad_to_same_then_subsample, b.build(y), {}, TARGET)
        return
    new = check_rule(maxpool_pad_to_same_then_subsample, b.build(y), {"MAX_POOL_2D": 1}, TARGET)
    dense, pick = new.ops
    assert (dense.attrs.stride, pick.attrs.kernel, pick.attrs.stride) == ((1, 1), (1, 1), (s, s))
    assert dense.attrs.padding == (k // 2, k // 2, k // 2, k // 2)


def test_maxpool_of_uneven_lead_or_after_relu_is_not_subsampled() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 16, 16))
    y = b.op(OpKind.MAX_POOL_2D, [x], kernel=(4, 4), stride=(2, 2), padding=(2, 2, 2, 2))
    z = b.op(
        OpKind.MAX_POOL_2D, [b.op(OpKind.RELU, [x])], kernel=(3, 3), stride=(2, 2), padding=(1,) * 4
    )
    check_rule(maxpool_pad_to_same_then_subsample, b.build(y, z), {}, TARGET)


def test_model_pad_equal_to_same_folds_into_the_conv() -> None:
    b = GraphBuilder()
    x = b.op(
        OpKind.PAD, [b.input("x", (1, 4, 16, 16))], pads=((0, 0), (0, 0), (0, 1), (0, 1)), value=0.0
    )
    y = _conv(b, x, 4, 3, 2, 0)
    new = check_rule(pad_into_same_conv, b.build(y), {"PAD": -1}, TARGET)
    assert new.ops[0].attrs.padding == (0, 1, 0, 1)


def test_model_pad_that_is_not_same_stays() -> None:
    b = GraphBuilder()
    x = b.op(
        OpKind.PAD, [b.input("x", (1, 4, 16, 16))], pads=((0, 0), (0, 0), (1, 1), (1, 1)), value=0.0
    )
    y = _conv(b, x, 4, 3, 2, 0)
    check_rule(pad_into_same_conv, b.build(y), {}, TARGET)
