"""GroupNorm and InstanceNorm: imported on both paths as GROUP_NORM, refused on the MDLA (no
RSQRT) with the way out, and with `--cpu GROUP_NORM` run by the engine's cpu device bit for bit
with run_int8 (cpu/float_ops.c against mdla_quant/kernels/group_norm.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
import mdla_legalize
import mdla_quant
import mdla_runtime
from mdla_ir import OpKind
from mdla_ir.partitions import CPU
from mdla_legalize import LegalizeError
from mdla_quant.kernels.group_norm import group_norm_f32


class NormBlock(nn.Module):
    """GroupNorm, affine and plain InstanceNorm, F.group_norm, InstanceNorm with running stats."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.gn = nn.GroupNorm(2, 8)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.plain = nn.InstanceNorm2d(8)
        self.tracked = nn.InstanceNorm2d(8, track_running_stats=True)
        self.out = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.gn(self.conv(x)))
        z = F.relu(self.inorm(y)) + self.plain(y) + F.group_norm(y, 4) + self.tracked(y)
        return self.out(z)


def _block() -> NormBlock:
    torch.manual_seed(0)
    m = NormBlock()
    with torch.no_grad():
        for norm in (m.gn, m.inorm):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_(0, 0.2)
        m.tracked.running_mean.normal_(0, 0.1)
        m.tracked.running_var.uniform_(0.5, 1.5)
    return m.eval()


@pytest.mark.parametrize("path", ["fx", "export"])
def test_it_imports_as_group_norm_and_matches_torch(path: str) -> None:
    m = _block()
    graph = mdla_ir.from_torch(m, torch.zeros(1, 3, 8, 8), path=path)
    assert graph.count()["GROUP_NORM"] == 4
    assert graph.count()["BATCH_NORM"] == 1
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = m(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(mdla_ir.run_float(graph, [x])[0], want, atol=1e-5)


def test_the_float32_reference_is_torchs_group_norm() -> None:
    x = np.random.default_rng(1).standard_normal((2, 8, 5, 3)).astype(np.float32)
    w, b = np.linspace(0.5, 1.5, 8, dtype=np.float32), np.linspace(-1, 1, 8, dtype=np.float32)
    want = F.group_norm(torch.from_numpy(x), 4, torch.from_numpy(w), torch.from_numpy(b))
    got = group_norm_f32(x, 4, 1, 1e-5, w, b)
    np.testing.assert_allclose(got, want.numpy(), atol=2e-5)
    nhwc = group_norm_f32(x.transpose(0, 2, 3, 1), 4, 3, 1e-5, w, b)
    np.testing.assert_allclose(nhwc.transpose(0, 3, 1, 2), want.numpy(), atol=2e-5)


def test_the_mdla_refuses_it_naming_the_cpu_way_out() -> None:
    graph = mdla_ir.from_torch(_block(), torch.zeros(1, 3, 8, 8))
    with pytest.raises(LegalizeError, match=r"need RSQRT .*--cpu GROUP_NORM"):
        mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))


def test_the_engine_runs_it_bit_exact_with_run_int8(tmp_path: Path) -> None:
    graph = mdla_ir.from_torch(_block(), torch.zeros(1, 3, 8, 8))
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", ["GROUP_NORM"])
    on_cpu = [o for o in placed.ops if o.device == CPU]
    assert {o.kind for o in on_cpu} == {OpKind.GROUP_NORM.name}
    rng = np.random.default_rng(2)
    calib = [[rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)] for _ in range(3)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    path = mdla_runtime.save(qgraph, tmp_path / "norms.mdla")
    for seed in range(3):
        x = np.random.default_rng(10 + seed).uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
        r = mdla_runtime.open_target("emu").run(path, [x])
        (want,) = mdla_quant.run_int8(qgraph, [x], raw=True)
        np.testing.assert_array_equal(r.raw_outputs[0].reshape(want.shape), want)
    (f,) = mdla_ir.run_float(placed.graph, [x])
    (q,) = mdla_quant.run_int8(qgraph, [x])
    cosine = float(np.dot(f.ravel(), q.ravel()) / np.linalg.norm(f) / np.linalg.norm(q))
    assert cosine > 0.98, cosine
