"""MAX_POOL_3D kept whole (its rule `pool3d_to_pool2d` skipped, as `workbench bisect` does): the
int8 kernel (mdla_quant.kernels.max_pool_3d) is torch's max_pool3d on the codes; `--cpu auto`
places it on the CPU and the engine's C kernel (csrc/cpu/max_pool_3d.c) is bit-exact with
run_int8."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir.builders import act, qp, single_op_qgraph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from tests.runtime.test_engine_partitions import placed_engine_is_bit_exact

CASES = [
    ((2, 3, 3), (2, 2, 2), (0, 1, 1)),
    ((3, 2, 2), (1, 2, 1), (1, 0, 1)),
    ((1, 3, 3), (1, 1, 1), (0, 1, 1)),
]


@pytest.mark.parametrize(("k", "s", "p"), CASES)
def test_the_int8_pool_is_torchs_on_the_codes(
    k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...]
) -> None:
    codes = np.random.default_rng(sum(k)).integers(-128, 128, (2, 5, 6, 7, 3)).astype(np.int8)
    want = F.max_pool3d(torch.from_numpy(codes.astype(np.float32)).permute(0, 4, 1, 2, 3), k, s, p)
    want_np = want.permute(0, 2, 3, 4, 1).numpy()
    q = qp(0.1, 3)
    attrs = {"kernel": k, "stride": s, "padding": p}
    g = single_op_qgraph(OpKind.MAX_POOL_3D, [act("x", codes.shape, q)], want_np.shape, q, attrs)
    (got,) = run_int8(g, [(codes.astype(np.float32) - 3) * np.float32(0.1)], raw=True)
    np.testing.assert_array_equal(got, want_np)


class Clip(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(3, 4, (1, 3, 3), padding=(0, 1, 1))
        self.pool = nn.MaxPool3d((2, 3, 3), (2, 2, 2), (0, 1, 1))
        self.head = nn.Conv3d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(torch.relu(self.conv(x))))


def test_cpu_auto_places_the_pool_and_the_engine_is_bit_exact(tmp_path: Path) -> None:
    torch.manual_seed(0)
    x = torch.randn(1, 3, 4, 8, 8)
    module = Clip().eval()
    graph = mdla_ir.from_torch(module, (x,), name="clip")
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", ["auto"], ["pool3d_to_pool2d"])
    assert "MAX_POOL_3D" in {o.kind for o in placed.ops if o.device == "cpu"}
    (fp32,) = mdla_ir.run_float(placed.graph, [x.numpy()])
    np.testing.assert_allclose(fp32, module(x).detach().numpy(), rtol=1e-4, atol=1e-4)
    placed_engine_is_bit_exact(placed.graph, (1, 3, 4, 8, 8), tmp_path, "clip", seeds=2)
