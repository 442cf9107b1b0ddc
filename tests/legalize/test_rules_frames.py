"""Conv3d / MaxPool3d over frames, and the boundary squeeze (on NHWC = NDHWC clips)."""

from __future__ import annotations

import pytest

from mdla_ir import OpKind, run_float
from mdla_ir.testing import GraphBuilder, check_pass, random_inputs, relative_error
from mdla_legalize.rules.frames import (
    conv3d_to_conv2d,
    elementwise_into_reshape,
    pool3d_to_pool2d,
    reshape_past_clip,
    squeeze_boundary,
)
from mdla_legalize.testing import check_rule


def _conv3d(
    b: GraphBuilder,
    x: str,
    cin: int,
    cout: int,
    k: tuple[int, int, int],
    s: tuple[int, int, int],
    p: tuple[int, int, int],
) -> str:
    return b.op(
        OpKind.CONV_3D,
        [x, b.const(f"w{len(b.ops)}", (cout, cin, *k)), b.const(f"b{len(b.ops)}", (cout,))],
        stride=s,
        padding=p,
        dilation=(1, 1, 1),
        groups=1,
    )


@pytest.mark.parametrize(
    ("k", "s", "p", "d"),
    [
        ((3, 5, 5), (1, 2, 2), (1, 2, 2), 1),  # LipNet conv1
        ((3, 3, 3), (1, 1, 1), (1, 1, 1), 1),  # LipNet conv3
        ((3, 3, 3), (1, 1, 1), (0, 1, 1), 1),  # no temporal padding: T - 2 frames
        ((3, 3, 3), (2, 1, 1), (1, 1, 1), 1),  # temporal stride
        ((2, 3, 3), (1, 1, 1), (2, 1, 1), 2),  # temporal dilation, padding as wide as the taps
        ((1, 1, 1), (2, 1, 1), (0, 0, 0), 1),  # frame subsampling only
    ],
)
def test_conv3d_becomes_taps_conv_then_conv2d(
    k: tuple[int, int, int], s: tuple[int, int, int], p: tuple[int, int, int], d: int
) -> None:
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 6, 10, 12, 3))
    y = b.op(
        OpKind.CONV_3D,
        [x, b.const("w", (6, 3, *k)), b.const("b", (6,))],
        stride=s,
        padding=p,
        dilation=(d, 1, 1),
        groups=1,
    )
    new = check_rule(conv3d_to_conv2d, b.build(y), {"CONV_3D": -1, "CONV_2D": 2, "RESHAPE": 3})
    taps = new.ops[1]
    assert new.tensors[taps.outputs[0]].shape == (1, new.tensors[y].shape[1], 120, 3 * k[0])


def test_a_per_frame_conv3d_needs_no_taps() -> None:
    b = GraphBuilder(layout="NHWC")
    y = _conv3d(b, b.input("x", (1, 4, 10, 12, 3)), 3, 6, (1, 3, 3), (1, 1, 1), (0, 1, 1))
    check_rule(conv3d_to_conv2d, b.build(y), {"CONV_3D": -1, "CONV_2D": 1, "RESHAPE": 2})


@pytest.mark.parametrize("groups", [2, 4])
def test_grouped_conv3d_is_one_dense_conv(groups: int) -> None:
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (2, 4, 6, 6, 4))
    y = b.op(
        OpKind.CONV_3D,
        [x, b.const("w", (4, 4 // groups, 3, 3, 3)), b.const("b", (4,))],
        stride=(1, 1, 1),
        padding=(1, 1, 1),
        dilation=(1, 1, 1),
        groups=groups,
    )
    check_rule(conv3d_to_conv2d, b.build(y), {"CONV_3D": -1, "CONV_2D": 2, "RESHAPE": 3})


@pytest.mark.parametrize(
    ("k", "s", "p", "pools"),
    [
        ((1, 2, 2), (1, 2, 2), (0, 0, 0), 1),  # per frame
        ((2, 1, 1), (2, 1, 1), (0, 0, 0), 1),  # over time only
        ((2, 2, 2), (2, 2, 2), (0, 0, 0), 2),
        ((3, 3, 3), (2, 1, 2), (1, 1, 0), 2),
    ],
)
def test_maxpool3d_is_a_pool_per_axis_group(
    k: tuple[int, int, int], s: tuple[int, int, int], p: tuple[int, int, int], pools: int
) -> None:
    b = GraphBuilder(layout="NHWC")
    y = b.op(OpKind.MAX_POOL_3D, [b.input("x", (1, 4, 8, 8, 4))], kernel=k, stride=s, padding=p)
    reshapes = 2 if k[0] == 1 else 3  # frames, (rows,) clip
    check_rule(
        pool3d_to_pool2d,
        b.build(y),
        {"MAX_POOL_3D": -1, "MAX_POOL_2D": pools, "RESHAPE": reshapes},
    )


def test_relu_moves_inside_the_reshape() -> None:
    b = GraphBuilder(layout="NHWC")
    r = b.op(OpKind.RESHAPE, [b.input("x", (3, 4, 4, 2))], shape=(1, 3, 4, 4, 2))
    y = b.op(OpKind.RELU, [r])
    new = check_rule(elementwise_into_reshape, b.build(y), {})
    assert [op.kind for op in new.ops] == [OpKind.RELU, OpKind.RESHAPE]


def test_squeeze_boundary_folds_the_clip_reshapes() -> None:
    b = GraphBuilder(layout="NHWC")
    frames = b.op(OpKind.RESHAPE, [b.input("x", (1, 3, 4, 4, 2))], shape=(3, 4, 4, 2))
    act = b.op(OpKind.RELU, [frames])
    y = b.op(OpKind.RESHAPE, [act], shape=(1, 3, 4, 4, 2))
    graph = b.build(y)
    graph = graph.with_(boundary={"x": (0, 2, 3, 4, 1), y: (0, 2, 3, 4, 1)})
    xs = random_inputs(graph)
    assert xs[0].shape == (1, 2, 3, 4, 4)
    new = check_pass(squeeze_boundary, graph, {"RESHAPE": -2})
    assert new.tensors["x"].shape == (3, 4, 4, 2)
    assert new.tensors[y].shape == (3, 4, 4, 2)
    assert new.model_shape("x") == (1, 2, 3, 4, 4)
    assert relative_error(run_float(new, xs)[0], run_float(graph, xs)[0]) == 0.0


@pytest.mark.parametrize("include_pad", [True, False])
def test_avgpool3d_is_a_pool_per_frame_then_over_time(include_pad: bool) -> None:
    b = GraphBuilder(layout="NHWC")
    y = b.op(
        OpKind.AVERAGE_POOL_3D,
        [b.input("x", (1, 5, 8, 8, 4))],
        kernel=(3, 3, 3),
        stride=(2, 1, 1),
        padding=(1, 1, 1),
        count_include_pad=include_pad,
    )
    check_rule(
        pool3d_to_pool2d,
        b.build(y),
        {"AVERAGE_POOL_3D": -1, "AVERAGE_POOL_2D": 2, "RESHAPE": 3},
    )


def test_a_reshape_of_a_clip_others_read_reads_the_frames() -> None:
    b = GraphBuilder(layout="NHWC")
    clip = b.op(OpKind.RESHAPE, [b.input("x", (3, 4, 4, 2))], shape=(1, 3, 4, 4, 2))
    rows = b.op(OpKind.RESHAPE, [clip], shape=(1, 3, 16, 2))
    other = b.op(OpKind.RELU, [clip])
    graph = b.build(rows, other)
    new = check_rule(reshape_past_clip, graph, {})
    (r,) = [op for op in new.ops if rows in op.outputs]
    assert r.inputs == ("x",)
