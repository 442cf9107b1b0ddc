"""AvgPool3d, F.avg_pool3d and AdaptiveAvgPool3d import as AVERAGE_POOL_3D (both paths), whose
float kernel is torch's; an adaptive size that does not divide is refused with the fix."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
from mdla_ir import OpKind
from mdla_ir.importer import UnsupportedError


class Pool(nn.Module):
    def __init__(self, pool: nn.Module) -> None:
        super().__init__()
        self.pool = pool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


class FPool(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool3d(x, (2, 3, 3), (1, 2, 2), (1, 1, 0), count_include_pad=False)


POOLS = {
    "window": lambda: Pool(nn.AvgPool3d(2)),
    "padded": lambda: Pool(nn.AvgPool3d(3, (2, 1, 2), 1)),
    "time_only": lambda: Pool(nn.AvgPool3d((3, 1, 1), (2, 1, 1))),
    "functional_exclude_pad": FPool,
    "adaptive_global": lambda: Pool(nn.AdaptiveAvgPool3d(1)),
    "adaptive_frames": lambda: Pool(nn.AdaptiveAvgPool3d((3, 1, 1))),
    "adaptive_none": lambda: Pool(nn.AdaptiveAvgPool3d((None, 2, 3))),
}


@pytest.mark.parametrize("path", ["fx", "export"])
@pytest.mark.parametrize("name", list(POOLS))
def test_avg_pool3d_imports_and_computes_torchs(name: str, path: str) -> None:
    module = POOLS[name]().eval()
    x = torch.randn(1, 3, 6, 8, 6)
    graph = mdla_ir.from_torch(module, (x,), name=name, path=path)
    assert [op.kind for op in graph.ops] == [OpKind.AVERAGE_POOL_3D]
    (got,) = mdla_ir.run_float(graph, [x.numpy()])
    np.testing.assert_allclose(got, module(x).numpy(), rtol=1e-5, atol=1e-6)


def test_an_adaptive_size_that_does_not_divide_is_refused_with_the_sizes_that_do() -> None:
    module = Pool(nn.AdaptiveAvgPool3d((4, 1, 1))).eval()
    with pytest.raises(UnsupportedError, match=r"adaptive_avg_pool3d to \(4, 1, 1\).*fix"):
        mdla_ir.from_torch(module, (torch.randn(1, 3, 6, 8, 8),), name="a", path="fx")


def test_divisor_override_is_refused() -> None:
    module = Pool(nn.AvgPool3d(2, divisor_override=3)).eval()
    with pytest.raises(UnsupportedError, match="divisor_override"):
        mdla_ir.from_torch(module, (torch.randn(1, 3, 4, 4, 4),), name="d", path="fx")


@pytest.mark.parametrize("path", ["fx", "export"])
def test_conv_transpose3d_is_refused_by_name_with_a_fix(path: str) -> None:
    module = Pool(nn.ConvTranspose3d(3, 4, 2, 2)).eval()
    with pytest.raises(UnsupportedError, match=r"ConvTranspose3d .*no route.*fix: "):
        mdla_ir.from_torch(module, (torch.randn(1, 3, 2, 4, 4),), name="t", path=path)
