"""The NCHW -> NHWC layout pass: filters, axes, constants, reshapes and the boundary."""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir import OpKind, run_float
from mdla_ir.testing import GraphBuilder, check_pass, random_inputs, relative_error
from mdla_legalize import to_nhwc


def _conv(b: GraphBuilder, x: str, cin: int, cout: int, dw: bool = False) -> str:
    kind = OpKind.DEPTHWISE_CONV_2D if dw else OpKind.CONV_2D
    w = b.const(f"w{len(b.ops)}", (cout, 1, 3, 3) if dw else (cout, cin, 3, 3))
    attrs: dict[str, Any] = {"multiplier": cout // cin} if dw else {"groups": 1}
    return b.op(
        kind,
        [x, w, b.const(f"b{len(b.ops)}", (cout,))],
        stride=(1, 1),
        dilation=(1, 1),
        padding=(1, 1, 1, 1),
        fuse="NONE",
        **attrs,
    )


def test_filters_axes_and_boundary() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 6, 5))
    c = _conv(b, x, 3, 8)
    d = _conv(b, c, 8, 16, dw=True)
    cat = b.op(
        OpKind.CONCATENATION,
        [d, b.op(OpKind.ADD, [d, b.const("k", (1, 16, 1, 1))], fuse="NONE")],
        axis=1,
    )
    padded = b.op(OpKind.PAD, [cat], pads=((0, 0), (0, 0), (1, 0), (0, 2)), value=0.0)
    m = b.op(OpKind.MEAN, [padded], axes=(2, 3), keepdims=True)
    y = b.op(OpKind.SOFTMAX, [m], axis=1, beta=1.0)
    graph = b.build(y)
    new = check_pass(to_nhwc, graph, {})
    assert new.layout == "NHWC"
    assert new.tensors["x"].shape == (1, 6, 5, 3)
    assert new.boundary["x"] == (0, 2, 3, 1)
    conv, dw, add, cat_op, pad, mean, soft = new.ops
    assert new.tensors[conv.inputs[1]].shape == (8, 3, 3, 3)
    assert new.tensors[dw.inputs[1]].shape == (1, 3, 3, 16)
    assert new.tensors[add.inputs[1]].shape == (1, 1, 1, 16)
    assert cat_op.attrs.axis == 3
    assert soft.attrs.axis == 3
    assert pad.attrs.pads == ((0, 0), (1, 0), (0, 2), (0, 0))
    assert mean.attrs.axes == (1, 2)


def test_flatten_of_1x1_features_is_a_reshape() -> None:
    b = GraphBuilder()
    m = b.op(OpKind.MEAN, [b.input("x", (1, 4, 3, 3))], axes=(2, 3), keepdims=True)
    y = b.op(OpKind.RESHAPE, [m], shape=(1, 4))
    new = check_pass(to_nhwc, b.build(y), {})
    assert new.ops[1].kind is OpKind.RESHAPE
    assert "y" not in new.boundary


def test_flatten_of_a_feature_map_needs_transposes() -> None:
    b = GraphBuilder()
    y = b.op(OpKind.RESHAPE, [b.input("x", (1, 2, 3, 3))], shape=(1, 18))
    new = check_pass(to_nhwc, b.build(y), {"TRANSPOSE": 1})
    assert new.ops[0].kind is OpKind.TRANSPOSE


def test_ops_without_an_nhwc_form_run_between_transposes() -> None:
    b = GraphBuilder()
    y = b.op(OpKind.CHANNEL_SHUFFLE, [b.input("x", (1, 4, 3, 3))], groups=2, axis=1)
    check_pass(to_nhwc, b.build(y), {"TRANSPOSE": 2})


def test_clip_is_ndhwc() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 2, 3, 4, 4))
    y = b.op(
        OpKind.CONV_3D,
        [x, b.const("w", (3, 2, 3, 3, 3)), b.const("b", (3,))],
        stride=(1, 1, 1),
        padding=(1, 1, 1),
        dilation=(1, 1, 1),
        groups=1,
    )
    graph = b.build(y)
    new = check_pass(to_nhwc, graph, {})
    assert new.tensors["x"].shape == (1, 3, 4, 4, 2)
    xs = random_inputs(graph)
    assert relative_error(run_float(new, xs)[0], run_float(graph, xs)[0]) < 1e-6
    assert np.isfinite(run_float(new, xs)[0]).all()


def test_a_reshaped_constant_keeps_the_model_order() -> None:
    """A layer-scale parameter reshaped in forward (`gamma.reshape(1, -1, 1, 1) * x`): the
    constant has no device layout of its own; its RESHAPE reads it in the model's order."""
    b = GraphBuilder()
    x = b.input("x", (1, 4, 3, 5))
    gamma = b.op(OpKind.RESHAPE, [b.const("gamma", (4,))], shape=(1, 4, 1, 1))
    y = b.op(OpKind.MUL, [x, gamma], fuse="NONE")
    new = check_pass(to_nhwc, b.build(y), {})
    reshape = next(op for op in new.ops if op.kind is OpKind.RESHAPE)
    assert reshape.attrs.shape == (1, 1, 1, 4)
