"""Exact channel rewrites: grouped conv -> block-diagonal CONV_2D, slices/splits/shuffles ->
1×1 selection CONV_2D (int8-exact), flatten -> Linear as an H×W conv, 1-D layers lifted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mdla_ir
from mdla_ir import OpKind
from mdla_ir.builders import act, qp, single_op_qgraph
from mdla_ir.lowerable import form_problems
from mdla_ir.passes import PassResult, canonicalize_reshapes
from mdla_ir.selection import is_selection
from mdla_ir.testing import GraphBuilder, check_pass
from mdla_legalize import explain, legalize, load_target
from mdla_legalize.rules.base import RuleFn, apply_table, single
from mdla_legalize.rules.channels import (
    channel_shuffle_to_selection,
    channel_slice_to_selection,
    grouped_conv_to_dense,
    movement_chain_to_selection,
    shuffle_order,
)
from mdla_legalize.rules.flatten import flatten_linear_to_conv, identity_adaptive_pool
from mdla_legalize.rules.lift import LIFT
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_runtime import LoweringError, to_bytes

TARGET = load_target("mdla3.5")
CONV: dict[str, Any] = {
    "stride": (1, 1),
    "dilation": (1, 1),
    "padding": (1, 1, 1, 1),
    "fuse": "NONE",
}


def _grouped(groups: int = 4) -> mdla_ir.Graph:
    b = GraphBuilder()
    x = b.input("x", (1, 8, 6, 6))
    w, bias = b.const("w", (12, 8 // groups, 3, 3)), b.const("b", (12,))
    return b.build(b.op(OpKind.CONV_2D, [x, w, bias], name="conv", groups=groups, **CONV))


def test_grouped_conv_becomes_one_block_diagonal_conv() -> None:
    new = check_pass(
        lambda g: apply_table(single(grouped_conv_to_dense, OpKind.CONV_2D), g), _grouped()
    )
    (conv,) = new.ops
    assert conv.attrs.groups == 1
    w = new.const(conv.inputs[1])
    assert w.shape == (12, 8, 3, 3)
    for g in range(4):  # group g's 3 outputs read only its 2 inputs
        rows = w[3 * g : 3 * g + 3]
        assert not np.any(np.delete(rows, [2 * g, 2 * g + 1], axis=1))


def test_check_and_compile_share_the_grouped_conv_predicate() -> None:
    """explain calls a grouped CONV_2D unmapped for the reason lowering refuses it, and names
    the rule (and its cost); legalize rewrites it, so check --legalized and compile agree."""
    graph = _grouped()
    (row,) = explain(graph, TARGET).ops
    assert not row.supported
    assert "groups=4" in row.reason
    assert "GROUPED_CONV_2D" in row.reason
    assert (
        row.fix
        == "rule grouped_conv_to_dense (block-diagonal weights: exact, 4x this layer's MACs)"
    )
    skipped = legalize(graph, TARGET, skip_rules=["grouped_conv_to_dense"])
    report = explain(skipped, TARGET)
    assert not report.all_supported
    assert report.ops[-1].reason.startswith(form_problems(skipped.ops[-1])[0])
    done = legalize(graph, TARGET)
    assert explain(done, TARGET).all_supported
    q = qp(0.1, 0)
    w = np.ones((4, 3, 3, 2), np.int8)
    grouped = single_op_qgraph(
        OpKind.CONV_2D,
        [
            act("x", (1, 6, 6, 8), q),
            mdla_ir.Tensor("w", w.shape, "int8", data=w, quant=qp(0.01, 0)),
        ],
        (1, 4, 4, 4),
        q,
        {**CONV, "padding": (0, 0, 0, 0), "groups": 4},
    )
    with pytest.raises(LoweringError, match="groups=4: CONV_2D has no groups operand"):
        to_bytes(grouped)


def _slice_graph(kind: OpKind, **attrs: Any) -> mdla_ir.Graph:
    b = GraphBuilder()
    x = b.input("x", (1, 8, 5, 5))
    return b.build(b.op(kind, [x], name="sel", **attrs))


@pytest.mark.parametrize(
    ("kind", "attrs", "fn"),
    [
        (OpKind.SLICE, {"begin": (0, 2, 0, 0), "size": (1, 4, 5, 5)}, channel_slice_to_selection),
        (OpKind.CHANNEL_SHUFFLE, {"groups": 2, "axis": 1}, channel_shuffle_to_selection),
    ],
)
def test_slices_and_shuffles_become_selection_convs(
    kind: OpKind, attrs: dict[str, Any], fn: RuleFn
) -> None:
    graph = _slice_graph(kind, **attrs)
    new = check_pass(
        lambda g: apply_table(single(fn, kind), g), graph, {kind.name: -1, "CONV_2D": 1}
    )
    assert is_selection(new, new.ops[0])


def test_a_spatial_slice_is_left_alone() -> None:
    graph = _slice_graph(OpKind.SLICE, begin=(0, 0, 1, 0), size=(1, 8, 3, 5))
    assert not apply_table(single(channel_slice_to_selection, OpKind.SLICE), graph).changed


def _view_shuffle(perm: tuple[int, ...]) -> mdla_ir.Graph:
    b = GraphBuilder()
    x = b.input("x", (1, 8, 3, 4))
    v = b.op(OpKind.RESHAPE, [x], shape=(1, 2, 4, 3, 4))
    t = b.op(OpKind.TRANSPOSE, [v], perm=perm)
    out = (1, 8, 3, 4) if perm[3:] == (3, 4) else (1, 8, 4, 3)
    return b.build(b.op(OpKind.RESHAPE, [t], shape=out))


def test_view_transpose_reshape_shuffle_becomes_one_permutation_conv() -> None:
    moves = (OpKind.RESHAPE, OpKind.TRANSPOSE)
    table = [(frozenset(moves), movement_chain_to_selection)]
    new = check_pass(
        lambda g: apply_table(table, g),
        _view_shuffle((0, 2, 1, 3, 4)),
        {"RESHAPE": -2, "TRANSPOSE": -1, "CONV_2D": 1},
    )
    w = new.const(new.ops[0].inputs[1]).reshape(8, 8)
    assert [int(np.argmax(r)) for r in w] == shuffle_order(8, 2)
    spatial = _view_shuffle((0, 1, 2, 4, 3))  # swaps H and W: not a channel permutation
    assert not apply_table(table, spatial).changed


def test_selection_convs_are_bit_exact_in_int8() -> None:
    """int8 output == the int8 input's selected channels; weight scale 1, the output keeps the
    input's scale and zero point (requantization multiplier exactly 1)."""
    b = GraphBuilder()
    x = b.input("x", (1, 8, 5, 5))
    a = b.op(OpKind.SLICE, [x], name="piece", begin=(0, 4, 0, 0), size=(1, 4, 5, 5))
    s = b.op(OpKind.CHANNEL_SHUFFLE, [x], name="shuffled", groups=4, axis=1)
    device = legalize(b.build(a, s), TARGET)
    assert device.count() == {"CONV_2D": 2}
    rng = np.random.default_rng(0)
    calib = [[rng.uniform(-3, 2, (1, 8, 5, 5)).astype(np.float32)] for _ in range(3)]
    q = quantize(device, calib, QuantConfig())
    x_q = q.tensors[q.inputs[0]].quant
    assert x_q is not None
    for op in q.ops:
        w_q = q.tensors[op.inputs[1]].quant
        assert w_q is not None
        assert w_q.scale == (1.0,) * q.tensors[op.inputs[1]].shape[0]
        assert q.tensors[op.outputs[0]].quant == x_q
    xs = [rng.uniform(-3, 2, (1, 8, 5, 5)).astype(np.float32)]
    codes = np.clip(np.round(xs[0] / x_q.scale[0]) + x_q.zero_point[0], -128, 127)
    codes = codes.astype(np.int8).transpose(0, 2, 3, 1)  # NHWC, as the int8 graph holds it
    piece, shuffled = run_int8(q, xs, raw=True)
    np.testing.assert_array_equal(piece, codes[..., 4:])
    np.testing.assert_array_equal(shuffled, codes[..., shuffle_order(8, 4)])


def test_linear_over_a_flattened_map_is_one_valid_conv() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 3, 3))
    pooled = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [x], output_size=(3, 3))
    flat = b.op(OpKind.RESHAPE, [pooled], shape=(1, 36))
    fc = b.op(
        OpKind.FULLY_CONNECTED, [flat, b.const("w", (5, 36)), b.const("b", (5,))], fuse="NONE"
    )
    table = [
        (frozenset({OpKind.ADAPTIVE_AVG_POOL_2D}), identity_adaptive_pool),
        (frozenset({OpKind.FULLY_CONNECTED}), flatten_linear_to_conv),
    ]
    new = check_pass(
        lambda g: apply_table(table, g),
        b.build(fc),
        {"ADAPTIVE_AVG_POOL_2D": -1, "FULLY_CONNECTED": -1, "CONV_2D": 1},
    )
    conv = new.ops[0]
    assert new.const(conv.inputs[1]).shape == (5, 4, 3, 3)
    device = legalize(b.build(fc), TARGET)
    assert device.count() == {"CONV_2D": 1, "RESHAPE": 1}  # no TRANSPOSE
    assert explain(device, TARGET).all_supported


def test_1d_layers_meet_on_the_image() -> None:
    """RELU and a residual ADD between 1-D layers move onto the (N, C, 1, L) tensors."""
    b = GraphBuilder()
    x = b.input("x", (1, 4, 1, 10))
    flat = b.op(OpKind.RESHAPE, [x], shape=(1, 4, 10))
    r = b.op(OpKind.RELU, [flat])
    s = b.op(OpKind.ADD, [r, flat], fuse="NONE")
    out = b.op(OpKind.RESHAPE, [s], shape=(1, 4, 1, 10))

    def lift_then_fold(graph: mdla_ir.Graph) -> PassResult:  # as the model_layout stage runs them
        changed, result = False, PassResult(graph, False)
        while True:
            result = apply_table(LIFT, result.graph)
            folded = canonicalize_reshapes(result.graph)
            if not (result.changed or folded.changed):
                return PassResult(folded.graph, changed)
            changed, result = True, folded

    new = check_pass(lift_then_fold, b.build(out, flat))
    assert new.count() == {"RESHAPE": 2, "RELU": 1, "ADD": 1}  # the 3-D output, the named one
    assert all(
        len(new.tensors[op.outputs[0]].shape) == 4
        for op in new.ops
        if op.kind is not OpKind.RESHAPE
    )


def test_a_selection_folds_into_the_conv_reading_it_bit_exactly() -> None:
    """CONV(SLICE(x)) and SEL(SHUFFLE(x)): the folded graph's int8 outputs equal the unfolded
    graph's, bit for bit, with fewer ops."""
    b = GraphBuilder()
    x = b.input("x", (1, 8, 6, 6))
    piece = b.op(OpKind.SLICE, [x], begin=(0, 4, 0, 0), size=(1, 4, 6, 6))
    conv = b.op(OpKind.CONV_2D, [piece, b.const("w", (5, 4, 3, 3)), b.const("b", (5,))], **CONV)
    shuffled = b.op(OpKind.CHANNEL_SHUFFLE, [x], groups=2, axis=1)
    half = b.op(OpKind.SLICE, [shuffled], begin=(0, 0, 0, 0), size=(1, 4, 6, 6))
    graph = b.build(conv, half)
    folded = legalize(graph, TARGET)
    plain = legalize(graph, TARGET, skip_rules=["fold_selection"])
    assert folded.count() == {"CONV_2D": 2}
    assert plain.count() == {"CONV_2D": 4}
    rng = np.random.default_rng(1)
    calib = [[rng.uniform(-2, 2, (1, 8, 6, 6)).astype(np.float32)] for _ in range(3)]
    xs = [rng.uniform(-2, 2, (1, 8, 6, 6)).astype(np.float32)]
    q_folded, q_plain = (quantize(g, calib, QuantConfig()) for g in (folded, plain))
    for a, b_ in zip(
        run_int8(q_folded, xs, raw=True), run_int8(q_plain, xs, raw=True), strict=True
    ):
        np.testing.assert_array_equal(a, b_)
