"""BATCH_MATMUL of two int8 activations (mdla_quant.kernels.batch_matmul): bit-exact with
LiteRT's BUILTIN_REF BATCH_MATMUL (adj_x, adj_y, a broadcast batch), and on the engine's cpu
device (the emulator's k_batch_matmul.c, as cpu_part.c runs it) bit-exact with run_int8 when
`--cpu BATCH_MATMUL` places it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir.affine import dequantize_output
from mdla_ir.builders import act, qp
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import OpKind
from mdla_ir.provenance import Provenance
from mdla_quant import run_int8
from mdla_runtime import load, save
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes
from tests.runtime.test_engine_partitions import engine, outputs, placed_engine_is_bit_exact

CASES = [  # lhs shape, rhs shape, adj_x, adj_y
    ((2, 5, 7), (2, 7, 3), False, False),
    ((2, 7, 5), (2, 7, 3), True, False),
    ((1, 5, 7), (1, 3, 7), False, True),
    ((3, 4, 6), (1, 6, 2), False, False),
    ((1, 2, 9, 4), (1, 2, 4, 9), False, False),
]


def matmul_graph(lhs: tuple[int, ...], rhs: tuple[int, ...], adj_x: bool, adj_y: bool) -> Graph:
    rng = np.random.default_rng(sum(lhs) + sum(rhs))
    a = act("a", lhs, qp(float(rng.uniform(0.01, 0.1)), int(rng.integers(-50, 50))))
    b = act("b", rhs, qp(float(rng.uniform(0.01, 0.1)), int(rng.integers(-50, 50))))
    left = np.swapaxes(np.zeros(lhs), -1, -2) if adj_x else np.zeros(lhs)
    right = np.swapaxes(np.zeros(rhs), -1, -2) if adj_y else np.zeros(rhs)
    shape = np.matmul(left, right).shape
    y = act("y", shape, qp(float(rng.uniform(0.05, 0.5)), int(rng.integers(-20, 20))))
    op = Op(OpKind.BATCH_MATMUL, "mm", ("a", "b"), ("y",), {"adj_x": adj_x, "adj_y": adj_y})
    prov = Provenance(device="mtk-mdla", cpu_ops=("mm",))
    tensors = {t.name: t for t in (a, b, y)}
    return Graph("mm", tensors, (op,), ("a", "b"), ("y",), "NHWC", provenance=prov)


def codes_of(g: Graph, seed: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, g.tensors[n].shape).astype(np.int8) for n in g.inputs]


def floats_of(g: Graph, codes: list[Any]) -> list[Any]:
    out = []
    for n, c in zip(g.inputs, codes, strict=True):
        q = g.tensors[n].quant
        assert q is not None
        out.append(dequantize_output(c, q.scale[0], q.zero_point[0]))
    return out


@pytest.mark.parametrize(("lhs", "rhs", "adj_x", "adj_y"), CASES)
def test_bit_exact_with_builtin_ref(
    lhs: tuple[int, ...], rhs: tuple[int, ...], adj_x: bool, adj_y: bool
) -> None:
    g = matmul_graph(lhs, rhs, adj_x, adj_y)
    for seed in range(3):
        codes = codes_of(g, seed)
        (ours,) = run_int8(g, floats_of(g, codes), raw=True)
        (theirs,) = run_tflite_reference(tflite_bytes(g), codes)
        np.testing.assert_array_equal(theirs, ours)
        assert len(np.unique(ours)) > 5  # not all clamped


@pytest.mark.parametrize(("lhs", "rhs", "adj_x", "adj_y"), CASES)
def test_the_engines_cpu_is_bit_exact(
    tmp_path: Path, lhs: tuple[int, ...], rhs: tuple[int, ...], adj_x: bool, adj_y: bool
) -> None:
    g = matmul_graph(lhs, rhs, adj_x, adj_y)
    path = save(g, tmp_path / "mm.mdla")
    assert [p.device for p in load(path).partitions] == ["cpu"]
    xs = floats_of(g, codes_of(g, 5))
    code, out, err = engine(path, tmp_path, xs, "--lib", str(tmp_path / "no-adapter.so"))
    assert code == 0, out + err
    want = run_int8(g, xs, raw=True)
    (got,) = outputs(path, tmp_path, want)
    np.testing.assert_array_equal(got, want[0])


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Conv2d(4, 8, 1)
        self.k = nn.Conv2d(4, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k = self.q(x).flatten(2), self.k(x).flatten(2)
        return torch.matmul(torch.matmul(q.transpose(1, 2), k), k.transpose(1, 2))


def test_an_attention_placed_on_the_cpu_is_bit_exact(tmp_path: Path) -> None:
    torch.manual_seed(0)
    graph = mdla_ir.from_torch(Attention().eval(), (torch.randn(1, 4, 4, 4),), name="attn")
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", ["auto,BATCH_MATMUL"])
    assert sum(o.kind == "BATCH_MATMUL" and o.device == "cpu" for o in placed.ops) == 2
    placed_engine_is_bit_exact(placed.graph, (1, 4, 4, 4), tmp_path, "attn", seeds=2)
