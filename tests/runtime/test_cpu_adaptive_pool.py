"""ADAPTIVE_AVG_POOL_2D to a size that does not divide (smp PSPNet's 16 -> 3, 16 -> 6): the int8
kernel (mdla_quant.kernels.adaptive_pool) averages torch's bins, rounded half away from zero as
AVERAGE_POOL_2D; ADAPTIVE_MAX_POOL_2D takes their maxima (both importers make it where the size
does not divide); `--cpu auto` places the max pool on the CPU (the average pool maps on the
MDLA as band convs, `adaptive_pool_uneven_to_bands`; with that rule skipped it runs on the CPU
too) and the engine's C kernels are bit-exact with run_int8."""

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
from mdla_quant.kernels.adaptive_pool import bins
from tests.runtime.test_engine_partitions import placed_engine_is_bit_exact

TARGET = mdla_legalize.load_target("mdla3.5")


@pytest.mark.parametrize(("size", "out"), [(16, 3), (16, 6), (7, 5), (5, 7), (14, 1), (9, 9)])
def test_the_int8_pool_is_torchs_mean_rounded_half_away(size: int, out: int) -> None:
    rng = np.random.default_rng(size * 10 + out)
    codes = rng.integers(-128, 128, (2, size, size + 1, 3)).astype(np.int8)
    osize = (out, max(1, out - 1))
    q = qp(0.05, 0)
    g = single_op_qgraph(
        OpKind.ADAPTIVE_AVG_POOL_2D, [act("x", codes.shape, q)], (2, *osize, 3), q,
        {"output_size": osize},
    )  # fmt: skip
    (got,) = run_int8(g, [codes.astype(np.float32) * np.float32(0.05)], raw=True)
    mean = F.adaptive_avg_pool2d(
        torch.from_numpy(codes.astype(np.float64)).permute(0, 3, 1, 2), osize
    )
    want = mean.permute(0, 2, 3, 1).numpy()
    np.testing.assert_array_equal(got, np.sign(want) * np.floor(np.abs(want) + 0.5))
    assert bins(size, out)[0][0] == 0
    assert bins(size, out)[-1][1] == size
    g_max = single_op_qgraph(
        OpKind.ADAPTIVE_MAX_POOL_2D, [act("x", codes.shape, q)], (2, *osize, 3), q,
        {"output_size": osize},
    )  # fmt: skip
    (got,) = run_int8(g_max, [codes.astype(np.float32) * np.float32(0.05)], raw=True)
    most = F.adaptive_max_pool2d(
        torch.from_numpy(codes.astype(np.float64)).permute(0, 3, 1, 2), osize
    )
    np.testing.assert_array_equal(got, most.permute(0, 2, 3, 1).numpy())


class Pyramid(nn.Module):
    """PSPNet's pooling branch in small: pools to sizes that do not divide the input."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool3 = nn.AdaptiveAvgPool2d(3)
        self.pool6 = nn.AdaptiveMaxPool2d((6, 5))
        self.c3 = nn.Conv2d(8, 4, 1)
        self.c6 = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        return self.c3(self.pool3(y)).mean((2, 3)) + self.c6(self.pool6(y)).mean((2, 3))


@pytest.mark.parametrize(
    ("path", "skip", "want"),
    [
        ("fx", (), ["ADAPTIVE_MAX_POOL_2D"]),
        ("export", (), ["ADAPTIVE_MAX_POOL_2D"]),
        (
            "fx",
            ("adaptive_pool_uneven_to_bands",),
            ["ADAPTIVE_AVG_POOL_2D", "ADAPTIVE_MAX_POOL_2D"],
        ),
    ],
)
def test_cpu_auto_places_the_pools_and_the_engine_is_bit_exact(
    tmp_path: Path, path: str, skip: tuple[str, ...], want: list[str]
) -> None:
    torch.manual_seed(0)
    x = torch.randn(1, 3, 16, 16)
    module = Pyramid().eval()
    graph = mdla_ir.from_torch(module, (x,), name="pyramid", path=path)
    (fp32,) = mdla_ir.run_float(graph, [x.numpy()])
    np.testing.assert_allclose(fp32, module(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    placed = mdla_legalize.place(graph, TARGET, "mtk-mdla", ["auto"], skip_rules=skip)
    on_cpu = [o.kind for o in placed.ops if o.device == "cpu"]
    assert on_cpu == want
    placed_engine_is_bit_exact(placed.graph, (1, 3, 16, 16), tmp_path, "pyramid", seeds=3)
