"""The cpu_forms stage: a SLICE no selection rule takes (a batch slice) leaves legalization as
the STRIDED_SLICE with unit steps that computes it, which `--cpu auto` places on the CPU; the
engine runs it bit-exact with run_int8."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_emu import build_emulator
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_runtime import load, save
from tests.runtime.test_engine_partitions import engine, outputs

TARGET = mdla_legalize.load_target("mdla3.5")


class Halves(nn.Module):
    """Adds the two halves of a batch of two: SLICEs of the batch axis."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return y[:1] + y[1:, :, 1:, :].mean((2,), keepdim=True)


def test_a_slice_no_rule_takes_becomes_a_unit_strided_slice(tmp_path: Path) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 4)
    graph = mdla_ir.from_torch(Halves().eval(), (x,), name="halves")
    assert OpKind.SLICE in {op.kind for op in graph.ops}
    device = mdla_legalize.rewrite(graph, TARGET, "mtk-mdla")
    assert OpKind.SLICE not in {op.kind for op in device.ops}
    strided = [op for op in device.ops if op.kind is OpKind.STRIDED_SLICE]
    assert strided
    assert all(set(op.attrs.strides) == {1} for op in strided)  # type: ignore[attr-defined]
    assert device.provenance.rule_counts["slice_to_strided_slice"] == len(strided)
    (want,) = mdla_ir.run_float(graph, [x.numpy()])
    (got,) = mdla_ir.run_float(device, [x.numpy()])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    placed = mdla_legalize.place(graph, TARGET, "mtk-mdla", ["auto"])
    assert {o.kind for o in placed.ops if o.device == "cpu"} >= {"STRIDED_SLICE"}
    rng = np.random.default_rng(1)
    calib = [[rng.normal(size=(2, 3, 4, 4)).astype(np.float32)] for _ in range(3)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    path = save(qgraph, tmp_path / "halves.mdla")
    xs = [rng.normal(size=s.model_shape).astype(np.float32) for s in load(path).inputs]
    code, out, err = engine(path, tmp_path, xs, "--lib", str(build_emulator()))
    assert code == 0, out + err
    want_q = run_int8(qgraph, xs, raw=True)
    for got_q, w in zip(outputs(path, tmp_path, want_q), want_q, strict=True):
        np.testing.assert_array_equal(got_q, w)
