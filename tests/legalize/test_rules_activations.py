"""Activation and elementwise rules, each alone through the shared pass checker."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

import mdla_ir
import mdla_legalize
from mdla_ir import OpKind
from mdla_ir.attrs import WhereAttrs
from mdla_ir.devices import NPU
from mdla_ir.testing import GraphBuilder
from mdla_legalize.rules.activations import (
    batchnorm_to_mul_add,
    div_const_to_mul,
    div_to_reciprocal_mul,
    gate_to_broadcast_mul,
    hardsigmoid_mul_to_hard_swish,
    hardsigmoid_to_relu6_mul,
    silu_to_logistic_mul,
    sub_const_to_add,
    where_to_prelu,
)
from mdla_legalize.testing import check_rule
from tests.runtime.test_engine_partitions import placed_engine_is_bit_exact


def test_silu_becomes_logistic_times_input() -> None:
    b = GraphBuilder()
    y = b.op(OpKind.SILU, [b.input("x", (1, 4, 5, 5))])
    new = check_rule(silu_to_logistic_mul, b.build(y), {"SILU": -1, "LOGISTIC": 1, "MUL": 1})
    mul = new.ops[-1]
    assert mul.kind is OpKind.MUL
    assert mul.inputs[0] == "x"
    assert mul.outputs == (y,)


def test_hardsigmoid_becomes_add_relu6_then_mul() -> None:
    b = GraphBuilder()
    y = b.op(OpKind.HARD_SIGMOID, [b.input("x", (1, 3, 4, 4))])
    new = check_rule(hardsigmoid_to_relu6_mul, b.build(y), {"HARD_SIGMOID": -1, "ADD": 1, "MUL": 1})
    assert new.ops[0].fuse == "RELU6"


def test_hand_written_hardswish_becomes_hard_swish() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 4, 4))
    gate = b.op(OpKind.HARD_SIGMOID, [x])
    y = b.op(OpKind.MUL, [x, gate], fuse="NONE")
    check_rule(
        hardsigmoid_mul_to_hard_swish, b.build(y), {"HARD_SIGMOID": -1, "MUL": -1, "HARD_SWISH": 1}
    )


def test_hardsigmoid_used_elsewhere_is_not_fused() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 4, 4))
    gate = b.op(OpKind.HARD_SIGMOID, [x])
    y = b.op(OpKind.MUL, [x, gate], fuse="NONE")
    check_rule(hardsigmoid_mul_to_hard_swish, b.build(y, gate), {})


def test_lone_batchnorm_becomes_mul_add() -> None:
    b = GraphBuilder()
    c = 6
    ins = [
        b.input("x", (1, c, 3, 3)),
        b.const("m", (c,)),
        b.const("v", np.abs(np.random.default_rng(1).standard_normal(c)).astype(np.float32) + 0.1),
        b.const("g", (c,)),
        b.const("be", (c,)),
    ]
    y = b.op(OpKind.BATCH_NORM, ins, eps=1e-5)
    check_rule(batchnorm_to_mul_add, b.build(y), {"BATCH_NORM": -1, "MUL": 1, "ADD": 1})


def test_sub_and_div_by_constants() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 4, 4))
    s = b.op(OpKind.SUB, [x, b.const("c", (1, 3, 1, 1))], fuse="NONE")
    y = b.op(OpKind.DIV, [s, b.const("d", np.full((1, 3, 1, 1), 4.0, np.float32))], fuse="NONE")
    g = check_rule(sub_const_to_add, b.build(y), {"SUB": -1, "ADD": 1})
    check_rule(div_const_to_mul, g, {"DIV": -1, "MUL": 1})


def test_sub_of_two_activations_is_left_alone() -> None:
    b = GraphBuilder()
    y = b.op(OpKind.SUB, [b.input("x", (1, 2)), b.input("z", (1, 2))], fuse="NONE")
    check_rule(sub_const_to_add, b.build(y), {})


def test_squeeze_excite_gate_is_broadcast_as_second_operand() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 8, 5, 5))
    pooled = b.op(OpKind.MEAN, [x], axes=(2, 3), keepdims=True)
    gate = b.op(OpKind.LOGISTIC, [pooled])
    y = b.op(OpKind.MUL, [gate, x], fuse="NONE")
    new = check_rule(gate_to_broadcast_mul, b.build(y), {})
    assert new.ops[-1].inputs == (x, gate)


def test_div_by_an_activation_becomes_mul_by_its_reciprocal() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 4, 4))
    d = b.op(OpKind.ADD, [b.op(OpKind.RELU, [x]), b.const("one", np.ones((1,), np.float32))])
    y = b.op(OpKind.DIV, [x, d], fuse="RELU")
    new = check_rule(div_to_reciprocal_mul, b.build(y), {"DIV": -1, "RECIPROCAL": 1, "MUL": 1})
    mul = new.ops[-1]
    assert (mul.kind, mul.inputs[0], mul.outputs, mul.fuse) == (OpKind.MUL, "x", (y,), "RELU")
    assert new.ops[-2].kind is OpKind.RECIPROCAL


def _over(numerator: np.ndarray) -> tuple[GraphBuilder, str]:
    """numerator / (relu(x) + 0.5)."""
    b = GraphBuilder()
    x = b.input("x", (1, 3, 4, 4))
    d = b.op(OpKind.ADD, [b.op(OpKind.RELU, [x]), b.const("half", np.full((1,), 0.5, np.float32))])
    return b, b.op(OpKind.DIV, [b.const("n", numerator), d], fuse="NONE")


def test_one_over_an_activation_is_the_reciprocal_alone() -> None:
    b, y = _over(np.ones((1, 3, 4, 4), np.float32))
    check_rule(div_to_reciprocal_mul, b.build(y), {"DIV": -1, "RECIPROCAL": 1})
    b, y = _over(np.full((1,), 2.0, np.float32))
    new = check_rule(div_to_reciprocal_mul, b.build(y), {"DIV": -1, "RECIPROCAL": 1, "MUL": 1})
    assert new.ops[-1].inputs[1] == "n"  # the activation first, the constant second


def test_div_by_a_constant_is_left_to_div_const_to_mul() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 4, 4))
    y = b.op(OpKind.DIV, [x, b.const("d", np.full((1,), 4.0, np.float32))], fuse="NONE")
    check_rule(div_to_reciprocal_mul, b.build(y), {})


def _where(attrs: WhereAttrs) -> tuple[GraphBuilder, str]:
    b = GraphBuilder()
    return b, b.op(OpKind.WHERE, [b.input("x", (1, 4, 5, 5))], **dataclasses.asdict(attrs))


# x on the positive side, a * x on the negative one, in each way torch.where can say it
LEAKY = [
    WhereAttrs("gt", 0.0, 1.0, 0.0, 0.1, 0.0),  # where(x > 0, x, 0.1 * x)
    WhereAttrs("ge", 0.0, 1.0, 0.0, -0.5, 0.0),  # where(x >= 0, x, -0.5 * x)
    WhereAttrs("lt", 0.0, 2.5, 0.0, 1.0, 0.0),  # where(x < 0, 2.5 * x, x)
    WhereAttrs("le", 0.0, 0.25, 0.0, 1.0, 0.0),  # where(x <= 0, 0.25 * x, x)
]


@pytest.mark.parametrize("attrs", LEAKY, ids=lambda a: a.compare)
def test_a_hand_written_leaky_relu_becomes_prelu(attrs: WhereAttrs) -> None:
    b, y = _where(attrs)
    x = np.random.default_rng(0).normal(size=(1, 4, 5, 5)).astype(np.float32)
    x.flat[:3] = [0.0, -0.0, 1e-30]  # the boundary and both zeros
    new = check_rule(where_to_prelu, b.build(y), {"WHERE": -1, "PRELU": 1}, inputs=[x])
    (op,) = new.ops
    alpha = new.tensors[op.inputs[1]].data
    assert alpha is not None
    want = attrs.else_scale if attrs.compare in ("gt", "ge") else attrs.then_scale
    assert alpha.tolist() == [np.float32(want)]


def test_masked_fill_below_zero_becomes_relu() -> None:
    b, y = _where(WhereAttrs("lt", 0.0, 0.0, 0.0, 1.0, 0.0))  # x.masked_fill(x < 0, 0)
    check_rule(where_to_prelu, b.build(y), {"WHERE": -1, "RELU": 1})


@pytest.mark.parametrize(
    "attrs",
    [
        WhereAttrs("gt", 0.5, 1.0, 0.0, 0.1, 0.0),  # another threshold
        WhereAttrs("gt", 0.0, 1.0, 0.0, 0.1, 0.2),  # an offset
        WhereAttrs("gt", 0.0, 1.0, 0.3, 0.1, 0.0),
        WhereAttrs("gt", 0.0, 2.0, 0.0, 0.1, 0.0),  # the positive side scaled
        WhereAttrs("lt", 0.0, 0.1, 0.0, 2.0, 0.0),
        WhereAttrs("eq", 0.0, 1.0, 0.0, 0.1, 0.0),  # not a side of zero
        WhereAttrs("ne", 0.0, 1.0, 0.0, 0.1, 0.0),
    ],
    ids=["threshold", "else-offset", "then-offset", "scaled", "scaled-lt", "eq", "ne"],
)
def test_other_wheres_stay(attrs: WhereAttrs) -> None:
    b, y = _where(attrs)
    check_rule(where_to_prelu, b.build(y), {})


class HandLeaky(torch.nn.Module):
    """LeakyReLU and ReLU written as torch.where / masked_fill after convs."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        h = self.b(torch.where(y > 0, y, 0.1 * y))
        h = h.masked_fill(h < 0, 0.0) + 1.0
        return torch.where(h <= 0, -0.5 * h, h)


@pytest.mark.parametrize("path", ["fx", "export"])
def test_hand_written_leaky_relus_run_on_the_npu_bit_exact(path: str, tmp_path: Path) -> None:
    graph = mdla_ir.from_torch(HandLeaky().eval(), (torch.zeros(1, 3, 8, 8),), "leaky", path=path)
    placed = mdla_legalize.place(graph, mdla_legalize.load_target("mdla3.5"), NPU, ["auto"])
    assert placed.graph.provenance.cpu_ops == ()  # each WHERE was a table on the CPU before
    assert [op.kind for op in placed.graph.ops].count(OpKind.PRELU) == 2
    placed_engine_is_bit_exact(placed.graph, (1, 3, 8, 8), tmp_path, "leaky", seeds=2)
