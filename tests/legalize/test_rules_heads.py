"""Classifier-head and pool rules."""

from __future__ import annotations

from mdla_ir import OpKind
from mdla_ir.testing import GraphBuilder
from mdla_legalize.rules.heads import (
    adaptive_pool_to_avgpool,
    adaptive_pool_uneven_to_bands,
    adaptive_pool_upsample_to_resize,
    avgpool_include_pad_to_pad,
    avgpool_unpadded_count,
    global_avgpool_to_mean,
    linear_to_conv1x1,
)
from mdla_legalize.testing import check_rule


def _pool(b: GraphBuilder, x: str, k: int, s: int, p: int, include: bool) -> str:
    return b.op(
        OpKind.AVERAGE_POOL_2D,
        [x],
        kernel=(k, k),
        stride=(s, s),
        padding=(p, p, p, p),
        fuse="NONE",
        count_include_pad=include,
    )


def test_linear_becomes_1x1_conv_over_pooled_features() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 32, 7, 7))
    pooled = b.op(OpKind.MEAN, [x], axes=(2, 3), keepdims=True)
    flat = b.op(OpKind.RESHAPE, [pooled], shape=(1, 32))
    y = b.op(
        OpKind.FULLY_CONNECTED, [flat, b.const("w", (10, 32)), b.const("b", (10,))], fuse="NONE"
    )
    new = check_rule(
        linear_to_conv1x1, b.build(y), {"FULLY_CONNECTED": -1, "CONV_2D": 1, "RESHAPE": 2}
    )
    conv = next(op for op in new.ops if op.kind is OpKind.CONV_2D)
    assert new.tensors[conv.inputs[1]].shape == (10, 32, 1, 1)


def test_linear_without_bias_and_on_nhwc() -> None:
    b = GraphBuilder(layout="NHWC")
    y = b.op(OpKind.FULLY_CONNECTED, [b.input("x", (2, 16)), b.const("w", (4, 16))], fuse="RELU")
    new = check_rule(
        linear_to_conv1x1, b.build(y), {"FULLY_CONNECTED": -1, "CONV_2D": 1, "RESHAPE": 2}
    )
    assert new.tensors[new.ops[1].inputs[1]].shape == (4, 1, 1, 16)
    assert new.ops[1].fuse == "RELU"


def test_adaptive_pool_with_uniform_bins_becomes_average_pool() -> None:
    b = GraphBuilder()
    y = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [b.input("x", (1, 4, 12, 8))], output_size=(3, 2))
    new = check_rule(
        adaptive_pool_to_avgpool, b.build(y), {"ADAPTIVE_AVG_POOL_2D": -1, "AVERAGE_POOL_2D": 1}
    )
    assert new.ops[0].attrs.kernel == (4, 4)


def test_adaptive_pool_to_one_is_mean_and_uneven_bins_stay() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 7, 7))
    y = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [x], output_size=(1, 1))
    z = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [x], output_size=(3, 3))
    check_rule(adaptive_pool_to_avgpool, b.build(y, z), {"ADAPTIVE_AVG_POOL_2D": -1, "MEAN": 1})


def test_adaptive_pool_of_one_pixel_bins_becomes_nearest_resize() -> None:
    """An output at least the input's size copies pixel floor(i*H/OH): AlexNet's (6, 6) pool
    on a 1x1 map, a max pool 2x3 -> 4x9; uneven bins (2 -> 3: one bin holds two pixels) and
    the identity stay."""
    b = GraphBuilder()
    x = b.input("x", (1, 4, 1, 1))
    y = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [x], output_size=(6, 6))
    z = b.op(OpKind.ADAPTIVE_MAX_POOL_2D, [b.input("z", (1, 3, 2, 3))], output_size=(4, 9))
    new = check_rule(
        adaptive_pool_upsample_to_resize,
        b.build(y, z),
        {"ADAPTIVE_AVG_POOL_2D": -1, "ADAPTIVE_MAX_POOL_2D": -1, "RESIZE_NEAREST_NEIGHBOR": 2},
    )
    assert [op.attrs.size for op in new.ops] == [(6, 6), (4, 9)]
    b = GraphBuilder()
    x = b.input("x", (1, 4, 2, 2))
    y = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [x], output_size=(3, 4))
    z = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [x], output_size=(2, 2))
    check_rule(adaptive_pool_upsample_to_resize, b.build(y, z), {})


def test_global_average_pool_becomes_mean() -> None:
    b = GraphBuilder()
    y = _pool(b, b.input("x", (1, 4, 7, 7)), 7, 1, 0, True)
    check_rule(global_avgpool_to_mean, b.build(y), {"AVERAGE_POOL_2D": -1, "MEAN": 1})


def test_include_pad_average_pool_gets_an_explicit_pad() -> None:
    b = GraphBuilder()
    y = _pool(b, b.input("x", (1, 4, 8, 8)), 3, 2, 1, True)
    new = check_rule(avgpool_include_pad_to_pad, b.build(y), {"PAD": 1})
    assert not new.ops[1].attrs.count_include_pad
    assert new.ops[1].attrs.padding == (0, 0, 0, 0)


def test_exclude_pad_average_pool_is_already_neurons() -> None:
    b = GraphBuilder()
    y = _pool(b, b.input("x", (1, 4, 8, 8)), 3, 2, 1, False)
    check_rule(avgpool_include_pad_to_pad, b.build(y), {})


def test_unpadded_include_pad_pool_states_the_exclude_form() -> None:
    b = GraphBuilder()
    y = _pool(b, b.input("x", (1, 4, 8, 8)), 2, 2, 0, True)
    new = check_rule(avgpool_unpadded_count, b.build(y), {})
    assert new.ops[0].attrs.count_include_pad is False


def test_adaptive_pool_of_uneven_bins_becomes_band_convs() -> None:
    """VGG's 2x2 -> 7x7 (bins of one and two pixels, some shared by several outputs), UPerNet's
    2x2 -> 3x3, a 7x5 -> 3x3 that shrinks and a 5x6 -> 3x3 even along its columns: one depthwise
    band conv per distinct bin of an uneven axis, an average pool for an even one."""
    b = GraphBuilder()
    x = b.input("x", (1, 3, 2, 2))
    vgg = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [x], output_size=(7, 7))
    uper = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [x], output_size=(3, 3))
    shrink = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [b.input("s", (1, 2, 7, 5))], output_size=(3, 3))
    even = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [b.input("e", (1, 2, 5, 6))], output_size=(3, 3))
    new = check_rule(
        adaptive_pool_uneven_to_bands,
        b.build(vgg, uper, shrink, even),
        {
            "ADAPTIVE_AVG_POOL_2D": -4,
            "DEPTHWISE_CONV_2D": 3 + 3 + 3 + 3 + 3 + 3 + 3,
            "CONCATENATION": 7,
            "AVERAGE_POOL_2D": 1,
        },
    )
    assert not any(op.kind is OpKind.ADAPTIVE_AVG_POOL_2D for op in new.ops)
