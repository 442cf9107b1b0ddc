"""SOFTMAX over any axis on the cpu device (issue 17): `--cpu SOFTMAX` runs the emulator's int8
SOFTMAX (emu/k_softmax.c, TFLite's gemmlowp arithmetic per row along the axis, rows strided by
the product of the later dims: no transpose) inside mdla-engine, bit for bit mdla_quant's
kernel, which applies the same arithmetic to `moveaxis(x, axis, -1)`; for softmaxes whose axis
is not the last one after the NHWC layout pass (over H of a feature map, over the middle axis
of a [N, T, F] sequence) and for every axis of small 3-D and 4-D tensors."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_ir.builders import act, qp
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import OpKind
from mdla_ir.provenance import Provenance
from mdla_quant import run_int8
from mdla_runtime import load, open_target, save
from mdla_runtime.build import engine_path
from mdla_runtime.engine.target import quantize
from tests.workbench.softmax_models import softmax_over_height, softmax_over_time


def softmax_graph(shape: tuple[int, ...], axis: int, beta: float, s_in: float) -> Graph:
    tensors = [act("x", shape, qp(s_in, 7)), act("y", shape, qp(1 / 256, -128))]
    ops = (Op(OpKind.SOFTMAX, "sm", ("x",), ("y",), {"axis": axis, "beta": beta}),)
    prov = Provenance(device="mtk-mdla", cpu_ops=("sm",))
    return Graph("sm", {t.name: t for t in tensors}, ops, ("x",), ("y",), "NHWC", provenance=prov)


@pytest.mark.parametrize(
    ("shape", "axis", "beta"),
    [
        ((2, 3, 4, 5), 0, 1.0),
        ((2, 3, 4, 5), 1, 1.0),
        ((2, 3, 4, 5), 2, 0.5),
        ((2, 3, 4, 5), 3, 1.0),  # the last axis: one contiguous row per position
        ((3, 7, 4), 1, 1.0),
        ((3, 7, 4), -2, 2.0),  # the same axis, counted from the end
        ((1, 40, 1, 1), 1, 1.0),  # one long strided row
    ],
)
def test_softmax_on_every_axis_is_the_references(
    tmp_path: Path, shape: tuple[int, ...], axis: int, beta: float
) -> None:
    graph = softmax_graph(shape, axis, beta, 0.06)
    path = save(graph, tmp_path / "sm.mdla")
    assert [p.device for p in load(path).partitions] == ["cpu"]
    rng = np.random.default_rng(sum(shape) + axis)
    x = rng.normal(0, 2, shape).astype(np.float32)
    f = tmp_path / "x.bin"
    f.write_bytes(quantize(x, load(path).inputs[0]).tobytes())
    args = [str(engine_path()), str(path), "--input", str(f), "--outdir", str(tmp_path)]
    args += ["--lib", str(tmp_path / "no-adapter.so")]  # a cpu-only run opens no adapter
    (want,) = run_int8(graph, [x], raw=True)
    for threads in ("1", "2", "3"):  # the rows cut over the cpu partition's threads, every one
        env = os.environ | {"MDLA_CPU_THREADS": threads, "MDLA_EMU_MIN_WORK": "1"}
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr
        got = np.fromfile(tmp_path / "output_0.bin", np.int8).reshape(shape)
        np.testing.assert_array_equal(got, want, err_msg=f"{threads} threads")
    # and it is a softmax along `axis`: each row sums to ~1, close to the float one
    xq = (quantize(x, load(path).inputs[0]).astype(np.float32) - 7) * np.float32(0.06)
    e = np.exp(beta * (xq - xq.max(axis=axis, keepdims=True)))
    ref = e / e.sum(axis=axis, keepdims=True)
    y = (got.astype(np.float32) + 128) / 256
    assert np.abs(y - ref).max() <= 1.5 / 256
    rows = np.moveaxis(y, axis, -1).sum(axis=-1)
    assert np.abs(rows - 1).max() <= shape[axis] / 256


def placed(
    make: Callable[[], tuple[nn.Module, torch.Tensor]], cpu: list[str]
) -> tuple[Graph, np.ndarray]:
    module, x0 = make()
    graph = mdla_ir.from_torch(module, (x0,), name=make.__name__)
    placement = mdla_legalize.place(graph, mdla_legalize.load_target("mdla3.5"), "mtk-mdla", cpu)
    rng = np.random.default_rng(5)
    calib = [[rng.normal(size=x0.shape).astype(np.float32)] for _ in range(2)]
    return mdla_quant.quantize(placement.graph, calib), rng.normal(size=x0.shape).astype(np.float32)


@pytest.mark.parametrize(
    ("make", "cpu", "axis", "rank", "devices"),
    [
        # softmax(dim=2) over NCHW's H: NHWC axis 1, between two NPU partitions
        (softmax_over_height, ["SOFTMAX"], 1, 4, ["mtk-mdla", "cpu", "mtk-mdla"]),
        # softmax(dim=1) over a [1, T, F] sequence: the middle axis of a rank-3 tensor (its
        # Linears over the last axis are 1x1 CONV_2Ds of the sequence's image: on the NPU)
        (softmax_over_time, ["SOFTMAX"], 1, 3, ["mtk-mdla", "cpu", "mtk-mdla"]),
    ],
)
def test_a_models_softmax_off_the_last_axis_runs_on_the_cpu(
    tmp_path: Path,
    make: Callable[[], tuple[nn.Module, torch.Tensor]],
    cpu: list[str],
    axis: int,
    rank: int,
    devices: list[str],
) -> None:
    qgraph, x = placed(make, cpu)
    (sm,) = [op for op in qgraph.ops if op.kind is OpKind.SOFTMAX]
    assert sm.name in qgraph.provenance.cpu_ops
    assert len(qgraph.tensors[sm.inputs[0]].shape) == rank
    assert sm.attrs.axis % rank == axis != rank - 1  # not the last axis after layout
    path = save(qgraph, tmp_path / "m.mdla")
    r = open_target("emu").run(path, [x])
    assert [p.device for p in r.partitions] == devices
    (want,) = run_int8(qgraph, [x], raw=True)
    np.testing.assert_array_equal(r.raw_outputs[0], want)
