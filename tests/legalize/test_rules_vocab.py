"""The rules for reductions over any axes, clamps with any bounds and SUB of two activations:
each exact in float (check_pass), each leaving only ops the MDLA maps."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mdla_ir
from mdla_ir import OpKind
from mdla_ir.passes import PassResult
from mdla_ir.testing import GraphBuilder, check_pass
from mdla_legalize import explain, load_target
from mdla_legalize.rules.base import Rule, apply_table
from mdla_legalize.rules.clamp import CLAMP
from mdla_legalize.rules.reduce import REDUCE
from mdla_legalize.rules.subtract import SUBTRACT

TARGET = load_target("mdla3.5")


def _fixed_point(table: list[Rule], graph: mdla_ir.Graph) -> PassResult:
    """The table to a fixed point (as legalize's stages run it)."""
    changed = False
    while True:
        result = apply_table(table, graph)
        if not result.changed:
            return PassResult(graph, changed)
        graph, changed = result.graph, True


def _mapped(graph: mdla_ir.Graph) -> None:
    report = explain(graph, TARGET)
    assert report.all_supported, str(report)


def _reduction(
    kind: OpKind, shape: tuple[int, ...], axes: tuple[int, ...], keep: bool
) -> mdla_ir.Graph:
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", shape)
    return b.build(b.op(kind, [x], name="r", axes=axes, keepdims=keep))


@pytest.mark.parametrize(
    ("axes", "keep", "pools"),
    [
        ((1, 2), True, 1),  # (H, W) of NHWC: the map itself is the window
        ((3,), True, 1),  # channels: [N, H*W, C, 1] pooled by (1, C)
        ((1,), False, 1),  # H alone
        ((2, 3), False, 1),  # W and C, one run
        ((1, 3), True, 2),  # H and C: two runs
        ((1, 2, 3), False, 1),  # everything but the batch
        ((0, 3), True, 1),  # the batch of one reduces nothing
    ],
)
def test_max_over_any_axes_is_max_pools(axes: tuple[int, ...], keep: bool, pools: int) -> None:
    graph = _reduction(OpKind.REDUCE_MAX, (1, 4, 5, 6), axes, keep)
    new = check_pass(lambda g: _fixed_point(REDUCE, g), graph, rtol=0.0)
    assert new.count().get("MAX_POOL_2D") == pools
    assert set(new.count()) <= {"MAX_POOL_2D", "RESHAPE"}
    _mapped(new)


def test_min_is_minus_max_of_minus() -> None:
    graph = _reduction(OpKind.REDUCE_MIN, (1, 4, 5, 6), (2,), True)
    new = check_pass(lambda g: _fixed_point(REDUCE, g), graph, rtol=0.0)
    assert new.count() == {"MUL": 2, "MAX_POOL_2D": 1}  # W of NHWC: [N, H, W, C] as it is
    _mapped(new)


@pytest.mark.parametrize("kind", [OpKind.REDUCE_SUM, OpKind.REDUCE_MAX, OpKind.REDUCE_MIN])
def test_a_reduction_to_rank_zero_ends_in_a_mean_of_one_element(kind: OpKind) -> None:
    """Constants and RESHAPE's shape operand cannot be rank 0: the reduction keeps its axes and
    a MEAN of its one element drops them."""
    new = check_pass(
        lambda g: _fixed_point(REDUCE, g),
        _reduction(kind, (1, 4, 5, 6), (0, 1, 2, 3), False),
        rtol=1e-6,
    )
    last = new.ops[-1]
    assert (last.kind, new.tensors[last.outputs[0]].shape) == (OpKind.MEAN, ())
    assert all(new.tensors[n].shape != () for op in new.ops[:-1] for n in op.outputs)
    _mapped(new)


def test_sum_is_mean_times_count() -> None:
    graph = _reduction(OpKind.REDUCE_SUM, (1, 4, 5, 6), (1, 2), False)
    new = check_pass(lambda g: _fixed_point(REDUCE, g), graph, rtol=1e-6)
    assert new.count() == {"MEAN": 1, "MUL": 1}
    (count,) = [new.const(n) for op in new.ops for n in op.inputs if new.tensors[n].is_const]
    assert count.ravel().tolist() == [20.0]
    _mapped(new)


@pytest.mark.parametrize(
    ("lo", "hi", "fuses"),
    [
        (0.0, 0.5, ["RELU6", "NONE"]),
        (-2.0, 2.0, ["RELU1", "NONE"]),
        (-1.0, 1.0, ["RELU1"]),
        (-0.5, 0.75, ["NONE", "RELU1", "NONE", "NONE"]),
        (-0.25, math.inf, ["RELU", "NONE"]),
        (-math.inf, 0.3, ["NONE", "RELU", "NONE", "NONE"]),
        (0.2, 0.2, ["NONE", "NONE"]),
    ],
)
def test_clamp_with_any_bounds_is_fused_relus(lo: float, hi: float, fuses: list[str]) -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 5, 6))
    graph = b.build(b.op(OpKind.CLAMP, [x], name="clamp", lo=lo, hi=hi))
    xs = [np.random.default_rng(1).uniform(-3, 3, (1, 4, 5, 6)).astype(np.float32)]
    new = check_pass(lambda g: apply_table(CLAMP, g), graph, rtol=1e-6, inputs=xs)
    assert [op.attrs.fuse for op in new.ops] == fuses
    out = mdla_ir.run_float(new, xs)[0]
    assert out.min() >= lo - 1e-6
    assert out.max() <= hi + 1e-6
    _mapped(new)


def test_sub_of_two_activations_is_add_of_the_negation() -> None:
    b = GraphBuilder()
    x, y = b.input("x", (1, 4, 5, 6)), b.input("y", (1, 4, 1, 1))
    graph = b.build(b.op(OpKind.SUB, [x, y], name="sub", fuse="NONE"))
    new = check_pass(lambda g: apply_table(SUBTRACT, g), graph, {"SUB": -1, "ADD": 1, "MUL": 1})
    _mapped(new)


def test_a_constant_minus_an_activation_keeps_the_activation_first() -> None:
    b = GraphBuilder()
    x, one = b.input("x", (1, 4, 5, 6)), b.const("one", np.ones(1, np.float32))
    graph = b.build(b.op(OpKind.SUB, [one, x], name="sub", fuse="NONE"))
    new = check_pass(lambda g: apply_table(SUBTRACT, g), graph, {"SUB": -1, "ADD": 1, "MUL": 1})
    add = next(op for op in new.ops if op.kind is OpKind.ADD)
    assert not new.tensors[add.inputs[0]].is_const
