"""Detector-head rewrites: a channel slice of a 3-D tensor (YOLO's `distance.chunk(2, 1)` on
`[N, 4, anchors]`) becomes RESHAPE, 1×1 selection CONV_2D, RESHAPE, bit-exact in int8; and
`cluster` orders a placed graph's ops so that each device's run together."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
from mdla_ir import OpKind
from mdla_ir.partitions import CPU, partitions
from mdla_ir.selection import is_selection
from mdla_ir.testing import GraphBuilder
from mdla_legalize import LegalizeError, legalize, load_target, place, rewrite
from mdla_legalize.cluster import cluster
from mdla_legalize.rules.base import apply_table, single
from mdla_legalize.rules.detect import (
    flat_channel_shuffle_to_selection,
    flat_channel_slice_to_selection,
)
from mdla_legalize.suggest import switches
from mdla_quant import QuantConfig, quantize, run_int8
from tests.runtime.test_engine_partitions import placed_engine_is_bit_exact

TARGET = load_target("mdla3.5")


def _sliced(shape: tuple[int, ...], begin: tuple[int, ...], size: tuple[int, ...]) -> mdla_ir.Graph:
    b = GraphBuilder()
    x = b.input("x", shape)
    return b.build(b.op(OpKind.SLICE, [x], name="lt", begin=begin, size=size))


def test_a_3d_channel_slice_becomes_a_selection_conv_between_reshapes() -> None:
    graph = _sliced((1, 4, 10), (0, 2, 0), (1, 2, 10))
    new = apply_table(single(flat_channel_slice_to_selection, OpKind.SLICE), graph).graph
    assert [o.kind for o in new.ops] == [OpKind.RESHAPE, OpKind.CONV_2D, OpKind.RESHAPE]
    assert is_selection(new, new.ops[1])
    x = np.random.default_rng(0).normal(size=(1, 4, 10)).astype(np.float32)
    (got,) = mdla_ir.run_float(new, [x])
    np.testing.assert_array_equal(got, x[:, 2:])


def test_a_slice_of_another_axis_or_a_4d_slice_is_left_alone() -> None:
    table = single(flat_channel_slice_to_selection, OpKind.SLICE)
    assert not apply_table(table, _sliced((1, 4, 10), (0, 0, 2), (1, 4, 5))).changed
    four = _sliced((1, 8, 5, 5), (0, 2, 0, 0), (1, 4, 5, 5))  # channels.py's rule
    assert not apply_table(table, four).changed


def test_a_3d_channel_slice_maps_and_is_bit_exact_in_int8() -> None:
    graph = _sliced((1, 4, 12), (0, 0, 0), (1, 2, 12))
    device = legalize(graph, TARGET)
    assert OpKind.SLICE.name not in device.count()
    rng = np.random.default_rng(1)
    calib = [[rng.uniform(-3, 5, (1, 4, 12)).astype(np.float32)] for _ in range(3)]
    q = quantize(device, calib, QuantConfig())
    x_q = q.tensors[q.inputs[0]].quant
    assert x_q is not None
    x = rng.uniform(-3, 5, (1, 4, 12)).astype(np.float32)
    codes = np.clip(np.round(x / x_q.scale[0]) + x_q.zero_point[0], -128, 127).astype(np.int8)
    (got,) = run_int8(q, [x])  # dequantized, in the graph's layout
    assert q.tensors[q.outputs[0]].quant == x_q
    want = (codes[:, :2].astype(np.float32) - x_q.zero_point[0]) * np.float32(x_q.scale[0])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(1, 6, 10), (1, 6, 2, 3, 4), (2, 6, 5)])
def test_a_channel_shuffle_that_is_not_4d_becomes_a_permutation_conv(
    shape: tuple[int, ...],
) -> None:
    b = GraphBuilder()
    x = b.input("x", shape)
    graph = b.build(b.op(OpKind.CHANNEL_SHUFFLE, [x], name="shuffle", groups=3, axis=1))
    new = apply_table(single(flat_channel_shuffle_to_selection, OpKind.CHANNEL_SHUFFLE), graph)
    assert [o.kind for o in new.graph.ops] == [OpKind.RESHAPE, OpKind.CONV_2D, OpKind.RESHAPE]
    assert is_selection(new.graph, new.graph.ops[1])
    data = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    (got,) = mdla_ir.run_float(new.graph, [data])
    want = torch.nn.functional.channel_shuffle(torch.from_numpy(data), 3).numpy()
    np.testing.assert_array_equal(got, want)
    four = GraphBuilder()
    y = four.op(OpKind.CHANNEL_SHUFFLE, [four.input("x", (1, 6, 2, 2))], groups=3, axis=1)
    table = single(flat_channel_shuffle_to_selection, OpKind.CHANNEL_SHUFFLE)
    assert not apply_table(table, four.build(y)).changed  # channels.py's rule


class _Shuffle1d(nn.Module):
    """A 1-D signal's channels shuffled between two convs (ShuffleNet-style audio)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv1d(4, 8, 3, padding=1), nn.Conv1d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(nn.functional.channel_shuffle(torch.relu(self.a(x)), 2))


@pytest.mark.parametrize("path", ["fx", "export"])
def test_a_1d_channel_shuffle_maps_and_runs_bit_exact(tmp_path: Path, path: str) -> None:
    torch.manual_seed(0)
    module = _Shuffle1d().eval()
    graph = mdla_ir.from_torch(module, (torch.zeros(1, 4, 16),), name="shuffle1d", path=path)
    device = legalize(graph, TARGET)
    assert OpKind.CHANNEL_SHUFFLE.name not in device.count()
    x = np.random.default_rng(3).normal(size=(1, 4, 16)).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(mdla_ir.run_float(device, [x])[0], want, rtol=1e-5, atol=1e-5)
    placed_engine_is_bit_exact(device, (1, 4, 16), tmp_path, "shuffle1d", seeds=2)


class _TwoLevelHead(nn.Module):
    """Per level: a conv (NPU), then a view (CPU by name); the views' concat on the CPU. In
    import order the devices alternate: conv, view, conv, view, cat."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ya = self.a(x).flatten(2)
        yb = self.b(x).flatten(2)
        return torch.cat([ya, yb], 2)


def test_place_runs_the_cpu_ops_of_every_level_in_one_partition() -> None:
    graph = mdla_ir.from_torch(_TwoLevelHead().eval(), (torch.rand(1, 3, 8, 8),), name="head")
    device = rewrite(graph, TARGET, "mtk-mdla")
    cpu = tuple(o.name for o in device.ops if o.kind is not OpKind.CONV_2D)
    as_imported = device.with_(provenance=dataclasses.replace(device.provenance, cpu_ops=cpu))
    assert len(partitions(as_imported)) == 4  # conv | flatten | conv | flatten, cat
    placed = place(graph, TARGET, "mtk-mdla", ["cat*", "flatten*"])
    assert placed.graph.provenance.cpu_ops == tuple(o.name for o in placed.graph.ops[2:])
    assert [p.device for p in placed.partitions] == ["mtk-mdla", CPU]
    x = np.random.default_rng(2).normal(size=(1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(
        mdla_ir.run_float(placed.graph, [x])[0], mdla_ir.run_float(device, [x])[0]
    )


def test_cluster_keeps_an_order_that_cannot_group_better() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 2, 3, 3))
    r = b.op(OpKind.RELU, [x], name="r")
    t = b.op(OpKind.TANH, [r], name="t")
    graph = b.build(b.op(OpKind.RELU, [t], name="r2"))
    assert cluster(graph, {"t"}) is graph


def test_the_advice_counts_the_switches_place_gives() -> None:
    """By kind, in import order, the two levels' TRANSPOSEs switch devices 4 times; place
    groups them (both convs, both TRANSPOSEs, the rest): 2, and the advice says 2."""
    graph = mdla_ir.from_torch(_TwoLevelHead().eval(), (torch.rand(1, 3, 8, 8),), name="head")
    with pytest.raises(LegalizeError) as info:
        legalize(graph, TARGET)
    assert info.value.advice == (
        "run them on the CPU: --cpu auto (here: --cpu TRANSPOSE; 2 device switch(es))",
    )
    device = rewrite(graph, TARGET, "mtk-mdla")
    assert switches([o.kind is OpKind.TRANSPOSE for o in device.ops]) == 4
    assert place(graph, TARGET, "mtk-mdla", ["auto"]).switches == 2
