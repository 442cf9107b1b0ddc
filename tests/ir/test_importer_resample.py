"""interpolate / Upsample at any scale: imported where the resize op samples what torch samples
(ATen's float32 arithmetic, `torch_sampling`), refused naming the first output that differs;
the imported float graph equals torch, and the int8 model runs bit-exact on the MDLA."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
from mdla_ir import UnsupportedError
from tests.models_rewrites import module_end_to_end


class Interp(nn.Module):
    def __init__(self, mode: str, scale: float, align: bool | None = None) -> None:
        super().__init__()
        self.mode, self.scale, self.align = mode, scale, align

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=self.scale, mode=self.mode, align_corners=self.align)


def _imported(module: nn.Module, x: np.ndarray, path: str) -> mdla_ir.Graph | None:
    """The graph, or None after checking the refusal says why and how to fix it."""
    try:
        return mdla_ir.from_torch(module, torch.from_numpy(x), path=path)
    except UnsupportedError as exc:
        why = str(exc)
    assert "torch samples at 1/" in why
    assert path == "export" or "recompute_scale_factor=True" in why
    return None


MODES = [("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True)]


@pytest.mark.parametrize("path", ["fx", "export"])
@pytest.mark.parametrize(("mode", "align"), MODES)
def test_every_scale_imports_exactly_or_is_refused_naming_the_output(
    mode: str, align: bool | None, path: str
) -> None:
    rng = np.random.default_rng(0)
    imported = 0
    for size in (5, 7, 8):
        for scale in (0.5, 1.3, 1.5, 2.0, 2.5, 3.0):
            x = rng.standard_normal((1, 2, size, size + 1)).astype(np.float32)
            module = Interp(mode, scale, align).eval()
            want = module(torch.from_numpy(x)).numpy()
            graph = _imported(module, x, path)
            if graph is None:
                continue
            imported += 1
            np.testing.assert_allclose(mdla_ir.run_float(graph, [x])[0], want, atol=1e-6)
    assert imported >= 6  # at least scales 2 and 3 on every size


def test_nearest_by_1_5_on_7_rows_imports_though_the_scales_differ() -> None:
    """7 -> 10: torch reads floor(d / 1.5), the op floor(d * 0.7): the same rows."""
    x = torch.randn(1, 1, 7, 7)
    graph = mdla_ir.from_torch(Interp("nearest", 1.5).eval(), x)
    np.testing.assert_array_equal(
        mdla_ir.run_float(graph, [x.numpy()])[0], Interp("nearest", 1.5)(x).numpy()
    )


def test_bilinear_align_corners_ignores_the_scale_factor_as_torch_does() -> None:
    x = torch.randn(1, 1, 7, 7)
    module = Interp("bilinear", 1.3, True).eval()
    graph = mdla_ir.from_torch(module, x)
    np.testing.assert_allclose(mdla_ir.run_float(graph, [x.numpy()])[0], module(x), atol=1e-6)


def test_a_shifted_bilinear_is_refused_naming_the_output_and_the_fix() -> None:
    with pytest.raises(UnsupportedError, match=r"output 1 reads source .* pass size=9"):
        mdla_ir.from_torch(Interp("bilinear", 1.3, False).eval(), torch.zeros(1, 1, 7, 7))


class Upsample15(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.up = nn.Upsample(scale_factor=1.5, mode="nearest")
        self.post = nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.up(F.relu(self.conv(x)))
        return self.post(y) + F.interpolate(y, scale_factor=1.0, mode="bilinear")


@pytest.mark.parametrize("path", ["fx", "export"])
def test_an_upsample_by_1_5_runs_bit_exact_on_the_mdla(path: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    result = module_end_to_end(Upsample15().eval(), (1, 3, 7, 7), "up15", tmp_path, path)
    assert result.float_error <= 1e-4
    assert result.kinds.get("RESIZE_NEAREST_NEIGHBOR") == 1
