"""The verifier: one test per invariant, each message naming the op or tensor at fault."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mdla_ir import Graph, Op, OpKind, Tensor, VerifyError, verify
from mdla_ir.testing import GraphBuilder


def base() -> Graph:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 4, 4))
    r = b.op(OpKind.RELU, [x], name="r")
    return b.build(b.op(OpKind.ADD, [r, x], name="a", fuse="NONE"))


def broken(**changes: object) -> str:
    with pytest.raises(VerifyError) as info:
        verify(dataclasses.replace(base(), **changes))  # type: ignore[arg-type]
    return str(info.value)


def test_sound_graph_passes() -> None:
    assert verify(base()) is not None


def test_use_before_definition() -> None:
    g = base()
    msg = broken(ops=(g.ops[1], g.ops[0]))
    assert "op #0 `a` (ADD): input `r` is used before it is produced" in msg


def test_not_ssa() -> None:
    g = base()
    twice = g.ops[0].with_(name="r2")
    msg = broken(ops=(g.ops[0], twice, g.ops[1]))
    assert "op #1 `r2` (RELU): output `r` is already defined (not SSA)" in msg
    assert "`r2`" in msg


def test_shape_mismatch() -> None:
    g = base()
    msg = broken(tensors={**g.tensors, "r": Tensor("r", (1, 3, 4, 5))})
    assert "op #0 `r` (RELU): output shape [(1, 3, 4, 5)] but its inputs give [(1, 3, 4, 4)]" in msg


def test_missing_tensor_and_dangling_tensor() -> None:
    g = base()
    tensors = {k: v for k, v in g.tensors.items() if k != "r"}
    tensors["junk"] = Tensor("junk", (2,), data=np.zeros(2, np.float32))
    msg = broken(tensors=tensors)
    assert "output `r` is not a tensor of the graph" in msg
    assert "tensor `junk` is dangling" in msg


def test_outputs_layout_names_and_boundary() -> None:
    msg = broken(outputs=("nope",), layout="NCWH", boundary={"x": (0, 2, 1)})
    assert "graph output `nope` is never produced" in msg
    assert "layout 'NCWH'" in msg
    assert "op #1 `a` (ADD): output(s) ['a'] are never used" in msg
    assert "boundary permutation (0, 2, 1) of `x`" in msg


def test_duplicate_op_name_and_all_problems_listed() -> None:
    g = base()
    dup = Op(OpKind.TANH, "r", ("a",), ("t",))
    msg = broken(
        ops=(*g.ops, dup), tensors={**g.tensors, "t": Tensor("t", (1, 3, 4, 4))}, outputs=("t",)
    )
    assert "op #2 `r`: op name used twice" in msg
    assert msg.startswith("graph `test` is malformed (1 problem(s))")


def test_op_table() -> None:
    text = str(base())
    assert text.splitlines()[0] == "graph test: 2 ops, 0 parameters, layout NCHW"
    assert "  0  RELU  1×3×4×4       r" in text
    assert text.splitlines()[-1] == "  2 ops: RELU 1, ADD 1"
