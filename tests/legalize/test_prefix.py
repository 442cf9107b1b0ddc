"""Prefix cuts: the first n ops, outputs = tensors live at the cut, on branching graphs."""

from __future__ import annotations

import pytest

from mdla_ir import OpKind, run_float, verify
from mdla_ir.testing import GraphBuilder, random_inputs
from mdla_legalize import LegalizeError, prefix


def _conv(b: GraphBuilder, x: str, c: int, name: str) -> str:
    return b.op(
        OpKind.CONV_2D,
        [x, b.const(f"{name}.w", (c, c, 1, 1)), b.const(f"{name}.b", (c,))],
        name=name,
        stride=(1, 1),
        dilation=(1, 1),
        padding=(0, 0, 0, 0),
        groups=1,
        fuse="NONE",
    )


def residual() -> tuple[GraphBuilder, str]:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 5, 5))
    a = _conv(b, x, 4, "a")
    c1 = _conv(b, a, 4, "c1")
    c2 = _conv(b, c1, 4, "c2")
    y = b.op(OpKind.ADD, [c2, a], name="add", fuse="NONE")
    return b, y


def test_residual_keeps_the_skip_live() -> None:
    b, y = residual()
    graph = b.build(y)
    cut = prefix(graph, 2)
    assert [op.name for op in cut.ops] == ["a", "c1"]
    assert cut.outputs == ("a", "c1")  # `a` is still read by the add, `c1` by c2
    verify(cut)
    assert prefix(graph, 3).outputs == ("a", "c2")
    assert prefix(graph, 4).outputs == ("add",)
    assert prefix(graph, 1).outputs == ("a",)


def test_prefix_values_match_the_full_graph() -> None:
    b, y = residual()
    graph = b.build(y)
    xs = random_inputs(graph)
    full = b.build(y, "a", "c2")
    want = dict(zip(full.outputs, run_float(full, xs), strict=True))
    cut = prefix(graph, 3)
    for name, value in zip(cut.outputs, run_float(cut, xs), strict=True):
        assert (value == want[name]).all()


def test_concat_branches() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 5, 5))
    s = _conv(b, x, 4, "squeeze")
    e1 = _conv(b, s, 4, "expand1")
    e3 = _conv(b, s, 4, "expand3")
    y = b.op(OpKind.CONCATENATION, [e1, e3], name="cat", axis=1)
    graph = b.build(y)
    assert prefix(graph, 2).outputs == ("squeeze", "expand1")
    assert prefix(graph, 3).outputs == ("expand1", "expand3")


def test_squeeze_excite() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 5, 5))
    f = _conv(b, x, 4, "features")
    pooled = b.op(OpKind.MEAN, [f], name="pool", axes=(2, 3), keepdims=True)
    gate = b.op(OpKind.LOGISTIC, [_conv(b, pooled, 4, "fc")], name="gate")
    y = b.op(OpKind.MUL, [f, gate], name="scale", fuse="NONE")
    graph = b.build(y)
    assert prefix(graph, 2).outputs == ("features", "pool")
    assert prefix(graph, 4).outputs == ("features", "gate")
    assert prefix(graph, 5).outputs == ("scale",)


def test_final_outputs_in_the_prefix_stay_outputs() -> None:
    b, y = residual()
    graph = b.build(y, "c1")
    assert prefix(graph, 2).outputs == ("a", "c1")


@pytest.mark.parametrize("n", [0, -1, 5])
def test_out_of_range(n: int) -> None:
    b, y = residual()
    with pytest.raises(LegalizeError, match=r"n must be in 1\.\.4"):
        prefix(b.build(y), n)
