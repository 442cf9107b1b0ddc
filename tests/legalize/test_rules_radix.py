"""Split-attention rules: rank-5 channel splits as rank-4 ops over channels, exact in float."""

from __future__ import annotations

import numpy as np

from mdla_ir import OpKind
from mdla_ir.testing import GraphBuilder
from mdla_legalize.rules.radix import (
    group_softmax_to_channels,
    pair_softmax_to_logistic,
    split_elementwise_to_channels,
    split_sum_to_conv,
)
from mdla_legalize.testing import check_rule


def _split(b: GraphBuilder, x: str, shape: tuple[int, ...]) -> str:
    return b.op(OpKind.RESHAPE, [x], shape=shape)


def test_weighted_sum_over_the_radix_becomes_mul_and_a_sum_conv() -> None:
    b = GraphBuilder()
    x = _split(b, b.input("x", (1, 12, 5, 4)), (1, 3, 4, 5, 4))
    a = _split(b, b.input("a", (1, 12, 1, 1)), (1, 3, 4, 1, 1))
    y = b.op(OpKind.MUL, [x, a], fuse="NONE")
    total = b.op(OpKind.REDUCE_SUM, [y], axes=(1,), keepdims=False)
    graph = b.build(total)
    new = check_rule(split_elementwise_to_channels, graph, {"RESHAPE": -1})
    assert all(len(new.tensors[o].shape) == 4 for o in new.ops[0].inputs)
    new = check_rule(split_sum_to_conv, new, {"RESHAPE": -1, "REDUCE_SUM": -1, "CONV_2D": 1})
    assert not any(len(t.shape) == 5 for t in new.tensors.values() if not t.is_const)


def test_a_stack_is_concatenated_along_channels_and_a_constant_reshaped() -> None:
    b = GraphBuilder()
    p, q = b.input("p", (1, 4, 3, 3)), b.input("q", (1, 4, 3, 3))
    stack = b.op(
        OpKind.CONCATENATION, [_split(b, p, (1, 1, 4, 3, 3)), _split(b, q, (1, 1, 4, 3, 3))], axis=1
    )
    y = b.op(OpKind.ADD, [stack, b.const("c", (2, 4, 1, 1))], fuse="NONE")
    mean = b.op(OpKind.MEAN, [y], axes=(1,), keepdims=True)
    new = check_rule(split_elementwise_to_channels, b.build(mean), {"RESHAPE": -1})
    new = check_rule(
        split_sum_to_conv, new, {"CONCATENATION": 0, "MEAN": -1, "CONV_2D": 1, "RESHAPE": 0}
    )


def test_two_way_softmax_of_moved_channels_becomes_logistic_of_differences() -> None:
    b = GraphBuilder()  # ResNeSt's rSoftMax with cardinality 2: view(N, K, R, -1).transpose(1, 2)
    v = b.op(OpKind.RESHAPE, [b.input("x", (1, 24, 1, 1))], shape=(1, 2, 2, 6))
    t = b.op(OpKind.TRANSPOSE, [v], perm=(0, 2, 1, 3))
    y = b.op(OpKind.SOFTMAX, [t], axis=1, beta=1.0)
    new = check_rule(
        pair_softmax_to_logistic,
        b.build(y),
        {"SOFTMAX": -1, "TRANSPOSE": -1, "CONV_2D": 1, "LOGISTIC": 1},
    )
    assert [op.kind for op in new.ops] == [OpKind.CONV_2D, OpKind.LOGISTIC, OpKind.RESHAPE]


def test_rank5_softmax_over_branches_of_a_map() -> None:
    b = GraphBuilder()  # SKNet's view(N, 2, C, 1, 1), here of a whole map and with beta
    v = _split(b, b.input("x", (1, 10, 3, 2)), (1, 2, 5, 3, 2))
    y = b.op(OpKind.SOFTMAX, [v], axis=1, beta=0.5)
    check_rule(pair_softmax_to_logistic, b.build(y), {"SOFTMAX": -1, "CONV_2D": 1, "LOGISTIC": 1})


def test_what_the_rules_leave_alone() -> None:
    b = GraphBuilder()  # three branches; a rank-4 softmax read through a RESHAPE only
    three = b.op(OpKind.SOFTMAX, [_split(b, b.input("x", (1, 12, 1, 1)), (1, 3, 4, 1, 1))], axis=1)
    flat = b.op(OpKind.SOFTMAX, [_split(b, b.input("z", (1, 8, 1, 1)), (1, 2, 4, 1))], axis=1)
    check_rule(pair_softmax_to_logistic, b.build(three, flat), {})
    b = GraphBuilder()  # a radix that does not split a rank-4 tensor's channels
    x = b.op(OpKind.TRANSPOSE, [b.input("x", (1, 4, 2, 3, 3))], perm=(0, 2, 1, 3, 4))
    y = b.op(OpKind.REDUCE_SUM, [x], axes=(1,), keepdims=False)
    np.testing.assert_equal(
        check_rule(split_sum_to_conv, b.build(y), {}).ops[-1].kind, OpKind.REDUCE_SUM
    )


def test_softmax_over_more_branches_runs_over_channels_of_the_groups_as_rows() -> None:
    b = GraphBuilder()  # rSoftMax at radix 4, cardinality 2; SKNet-style rank 5 with 3 branches
    v = b.op(OpKind.RESHAPE, [b.input("x", (1, 24, 1, 1))], shape=(1, 2, 4, 3))
    y = b.op(OpKind.SOFTMAX, [b.op(OpKind.TRANSPOSE, [v], perm=(0, 2, 1, 3))], axis=1, beta=1.0)
    z = b.op(OpKind.SOFTMAX, [_split(b, b.input("z", (1, 15, 1, 1)), (1, 3, 5, 1, 1))], axis=1)
    new = check_rule(
        group_softmax_to_channels,
        b.build(y, z),
        {"TRANSPOSE": -1, "TRANSPOSE_CONV_2D": 2, "CONV_2D": 2},
    )
    softmax = [op for op in new.ops if op.kind is OpKind.SOFTMAX]
    assert [new.tensors[op.inputs[0]].shape for op in softmax] == [(1, 4, 6, 1), (1, 3, 5, 1)]
