"""mdla_ir.partitions: consecutive ops on one device, the tensors crossing each boundary, and
the checks a partition list read from elsewhere (a manifest) must pass."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from mdla_ir import Graph, Op, OpKind, Provenance, Tensor
from mdla_ir.partitions import (
    CPU,
    PartitionError,
    check_partitions,
    devices,
    partitions,
    switches,
)

SHAPE = (1, 2, 2, 4)


def chain(cpu: tuple[str, ...]) -> Graph:
    """x -> a (RELU) -> b (GELU) -> c (RELU) -> d = ADD(c, x): one skip from the input."""
    tensors = {n: Tensor(n, SHAPE) for n in ("x", "a", "b", "c", "d")}
    tensors["k"] = Tensor("k", SHAPE, data=np.ones(SHAPE, np.float32))
    ops = (
        Op(OpKind.RELU, "relu_a", ("x",), ("a",)),
        Op(OpKind.GELU, "gelu_b", ("a",), ("b",)),
        Op(OpKind.MUL, "mul_c", ("b", "k"), ("c",)),
        Op(OpKind.ADD, "add_d", ("c", "x"), ("d",)),
    )
    prov = Provenance(device="mtk-mdla", cpu_ops=cpu)
    return Graph("chain", tensors, ops, ("x",), ("d",), "NHWC", provenance=prov)


def test_nothing_placed_is_one_npu_partition() -> None:
    parts = partitions(chain(()))
    assert [(p.device, p.ops) for p in parts] == [
        ("mtk-mdla", ("relu_a", "gelu_b", "mul_c", "add_d"))
    ]
    assert parts[0].inputs == ("x",)
    assert parts[0].outputs == ("d",)
    assert switches(parts) == 0


def test_a_cpu_op_in_the_middle_makes_three_partitions() -> None:
    graph = chain(("gelu_b",))
    assert devices(graph) == ("mtk-mdla", CPU, "mtk-mdla", "mtk-mdla")
    parts = partitions(graph)
    assert [(p.index, p.device, p.first, p.ops) for p in parts] == [
        (0, "mtk-mdla", 0, ("relu_a",)),
        (1, CPU, 1, ("gelu_b",)),
        (2, "mtk-mdla", 2, ("mul_c", "add_d")),
    ]
    # boundary tensors only: constants never cross, the skip from the input does
    assert [(p.inputs, p.outputs) for p in parts] == [
        (("x",), ("a",)),
        (("a",), ("b",)),
        (("b", "x"), ("d",)),
    ]
    assert switches(parts) == 2
    assert parts[1].on_cpu
    assert not parts[0].on_cpu


def test_consecutive_cpu_ops_share_a_partition() -> None:
    parts = partitions(chain(("gelu_b", "mul_c")))
    assert [p.ops for p in parts] == [("relu_a",), ("gelu_b", "mul_c"), ("add_d",)]
    assert parts[1].outputs == ("c",)


def test_a_placement_naming_a_missing_op_is_refused() -> None:
    with pytest.raises(PartitionError, match=r"no such op") as info:
        partitions(chain(("nope",)))
    assert "['nope']" in str(info.value)


Spec = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def spec(graph: Graph) -> list[Spec]:
    return [(p.device, p.ops, p.inputs, p.outputs) for p in partitions(graph)]


def test_derived_partitions_pass_the_check() -> None:
    for cpu in ((), ("gelu_b",), ("relu_a", "add_d")):
        graph = chain(cpu)
        check_partitions(graph, spec(graph))


def put(i: int, part: Spec) -> Callable[[list[Spec]], None]:
    return lambda parts: parts.__setitem__(i, part)


NPU = "mtk-mdla"


@pytest.mark.parametrize(
    ("edit", "message", "index"),
    [
        pytest.param(put(1, (CPU, ("gelu_b", "relu_a"), ("a",), ("b",))), "already", 1,
                     id="op-twice"),
        pytest.param(put(1, (CPU, ("gelu_z",), ("a",), ("b",))), "not in the graph", 1,
                     id="missing-op"),
        pytest.param(put(1, (CPU, ("gelu_b",), ("a", "ghost"), ("b",))), "ghost", 1,
                     id="missing-tensor"),
        pytest.param(put(0, (NPU, ("relu_a",), ("b",), ("a",))), "cycle", 0, id="cycle"),
        pytest.param(put(2, (NPU, ("mul_c", "add_d"), ("b",), ("d",))), "reads `x`", 2,
                     id="unlisted-input"),
        pytest.param(put(0, (NPU, ("relu_a",), ("x",), ())), "not an output", 1,
                     id="unlisted-output"),
        pytest.param(put(2, (NPU, ("mul_c",), ("b", "x"), ("d",))), "no partition", None,
                     id="op-in-none"),
    ],
)  # fmt: skip
def test_malformed_partitions_are_named(
    edit: Callable[[list[Spec]], None], message: str, index: int | None
) -> None:
    graph = chain(("gelu_b",))
    parts = spec(graph)
    edit(parts)
    with pytest.raises(PartitionError, match=message) as info:
        check_partitions(graph, parts)
    assert info.value.partition == index
