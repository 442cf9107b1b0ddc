"""bin(a, un(a)) (SiLU's MUL(x, LOGISTIC(x)) and its kin) as one 256-entry table of `a`,
against the two kernels run one after the other, on every code."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir.builders import act, as_floats, qp
from mdla_ir.graph import Graph, Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant import reference, run_int8
from mdla_quant.kernels import pairs
from mdla_quant.kernels.registry import INT8_KERNELS
from mdla_quant.kernels.tables import CODES

Array = np.ndarray[Any, Any]
SHAPE = (1, 4, 8, 8)  # 256 values: every code once
UNARY_Q = {
    OpKind.LOGISTIC: qp(1 / 256, -128),
    OpKind.TANH: qp(1 / 128, 0),
    OpKind.HARD_SWISH: qp(0.02, -100),
    OpKind.RELU: qp(0.03, -128),
    OpKind.RELU6: qp(6 / 255, -128),
}


def _graph(un: OpKind, kind: OpKind, swap: bool, between: int = 0, fuse: str = "NONE") -> Graph:
    """x -> un -> u, `between` RELUs of x, then kind(x, u) (or kind(u, x) with `swap`)."""
    xq, out_q = qp(0.05, 7), qp(0.04, -3)
    tensors = [act("x", SHAPE, xq), act("u", SHAPE, UNARY_Q[un]), act("out", SHAPE, out_q)]
    ops = [Op(un, "un", ("x",), ("u",), {})]
    for n in range(between):
        tensors.append(act(f"r{n}", SHAPE, xq))
        ops.append(Op(OpKind.RELU, f"relu{n}", ("x",), (f"r{n}",), {}))
    operands = ("u", "x") if swap else ("x", "u")
    ops.append(Op(kind, "bin", operands, ("out",), {"fuse": fuse}))
    outputs = ("out", *(f"r{n}" for n in range(between)))
    return Graph("pair", {t.name: t for t in tensors}, tuple(ops), ("x",), outputs, layout="NHWC")


def _run(g: Graph, monkeypatch: pytest.MonkeyPatch, paired: bool) -> list[Array]:
    x = CODES.reshape(SHAPE)
    if not paired:
        monkeypatch.setattr(reference, "unary_partner", lambda graph, i: None)
    out = run_int8(g, as_floats(g, [x]), raw=True)
    monkeypatch.undo()
    return out


@pytest.mark.parametrize("rounding", ["double", "single"])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("kind", [OpKind.MUL, OpKind.ADD, OpKind.SUB])
@pytest.mark.parametrize("un", list(UNARY_Q))
def test_a_pair_is_the_two_kernels_on_every_code(
    un: OpKind, kind: OpKind, swap: bool, rounding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = _graph(un, kind, swap, fuse="RELU6" if kind is OpKind.ADD else "NONE")
    assert pairs.unary_partner(g, 1) == (0, 1 if swap else 0)
    x = CODES.reshape(SHAPE)
    both = [run_int8(g, as_floats(g, [x]), raw=True, rounding=rounding)[0]]
    monkeypatch.setattr(reference, "unary_partner", lambda graph, i: None)
    both.append(run_int8(g, as_floats(g, [x]), raw=True, rounding=rounding)[0])
    assert np.array_equal(both[0], both[1])
    assert len(np.unique(both[1])) > 4  # a table with content, not a constant


def test_the_unary_op_may_be_two_ops_back_not_three(monkeypatch: pytest.MonkeyPatch) -> None:
    near = _graph(OpKind.LOGISTIC, OpKind.MUL, False, 1)
    far = _graph(OpKind.LOGISTIC, OpKind.MUL, False, 2)
    assert pairs.unary_partner(near, 2) == (0, 0)
    assert pairs.unary_partner(far, 3) is None
    assert all(
        np.array_equal(a, b)
        for a, b in zip(_run(near, monkeypatch, True), _run(near, monkeypatch, False), strict=True)
    )


def _with_q(g: Graph, name: str, q: QuantParams, shape: tuple[int, ...] | None = None) -> Graph:
    tensors = dict(g.tensors)
    tensors[name] = act(name, shape or g.tensors[name].shape, q)
    return Graph(g.name, tensors, g.ops, g.inputs, g.outputs, layout="NHWC")


def test_what_is_not_a_pair() -> None:
    g = _graph(OpKind.LOGISTIC, OpKind.MUL, False)
    assert pairs.unary_partner(g, 0) is None  # the unary op itself
    # a broadcast operand: the output is not elementwise in x alone
    wide = _with_q(_with_q(g, "u", UNARY_Q[OpKind.LOGISTIC], (1, 1, 1, 8)), "out", qp(0.04, -3))
    assert pairs.unary_partner(wide, 1) is None
    # a one-input op that is no elementwise table (SOFTMAX mixes a row's values)
    ops = (Op(OpKind.SOFTMAX, "un", ("x",), ("u",), {"axis": -1, "beta": 1.0}), g.ops[1])
    pool = Graph(g.name, g.tensors, ops, g.inputs, g.outputs, layout="NHWC")
    assert pairs.unary_partner(pool, 1) is None
    # MUL(x, un(y)) with y another tensor
    other = (Op(OpKind.LOGISTIC, "un", ("y",), ("u",), {}), g.ops[1])
    tensors = {**g.tensors, "y": act("y", SHAPE, qp(0.05, 7))}
    assert pairs.unary_partner(Graph(g.name, tensors, other, ("x", "y"), g.outputs), 1) is None


def _counting(monkeypatch: pytest.MonkeyPatch, kind: OpKind) -> list[tuple[int, ...]]:
    """The shapes the registered kernel of `kind` runs on from now on."""
    shapes: list[tuple[int, ...]] = []
    kernel = INT8_KERNELS[kind]

    def counted(op: Op, args: list[Array], *rest: Any) -> Array:
        shapes.append(args[0].shape)
        return kernel(op, args, *rest)

    monkeypatch.setitem(INT8_KERNELS, kind, counted)
    return shapes


def test_a_unary_op_only_its_pair_reads_is_skipped_unless_observed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    g = _graph(OpKind.LOGISTIC, OpKind.MUL, False)
    assert pairs.unread_unaries(g) == {0}
    x = CODES.reshape(SHAPE)
    want = _run(g, monkeypatch, False)[0]  # the two kernels, one after the other
    shapes = _counting(monkeypatch, OpKind.LOGISTIC)
    seen: dict[str, Array] = {}
    (observed,) = run_int8(g, as_floats(g, [x]), raw=True, observe=seen.__setitem__)
    assert "u" in seen
    assert SHAPE in shapes
    shapes.clear()
    (got,) = run_int8(g, as_floats(g, [x]), raw=True)
    assert SHAPE not in shapes  # not observed: LOGISTIC never runs on the activation
    assert np.array_equal(got, want)
    assert np.array_equal(observed, want)


def test_a_unary_output_read_elsewhere_is_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    g = _graph(OpKind.LOGISTIC, OpKind.MUL, False)
    as_output = Graph(g.name, g.tensors, g.ops, g.inputs, ("out", "u"), layout="NHWC")
    relu = Op(OpKind.RELU, "reader", ("u",), ("r",), {})
    tensors = {**g.tensors, "r": act("r", SHAPE, UNARY_Q[OpKind.LOGISTIC])}
    read = Graph(g.name, tensors, (*g.ops, relu), g.inputs, ("out", "r"), layout="NHWC")
    for graph in (as_output, read):
        assert pairs.unread_unaries(graph) == frozenset()
        shapes = _counting(monkeypatch, OpKind.LOGISTIC)
        outs = run_int8(graph, as_floats(graph, [CODES.reshape(SHAPE)]), raw=True)
        assert SHAPE in shapes
        monkeypatch.undo()
        assert np.array_equal(outs[0], _run(g, monkeypatch, False)[0])
