"""Video models (strided and dilated temporal convs, BatchNorm3d, grouped and channel-wise
Conv3d, an R(2+1)D block, 3-D max pools over time) map whole on the MDLA as 2-D ops over
frames, bit-exact emulator == run_int8 == LiteRT, on both import paths."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torchvision.models import video

import mdla_ir
import mdla_legalize
from tests.models_video import CASES, end_to_end, run_module


@pytest.mark.parametrize("path", ["fx", "export"])
@pytest.mark.parametrize("name", list(CASES))
def test_video_model_maps_and_is_bit_exact(name: str, path: str, tmp_path: Path) -> None:
    result = end_to_end(name, tmp_path, path)
    assert "CONV_3D" not in result.kinds
    assert not {"MAX_POOL_3D", "AVERAGE_POOL_3D"} & set(result.kinds)
    assert result.float_error <= 1e-4


@pytest.mark.parametrize("name", ["r3d_18", "mc3_18", "r2plus1d_18"])
def test_torchvision_video_resnets_map_whole(name: str) -> None:
    """torchvision's video ResNets (Conv3DSimple, Conv3DNoTemporal, Conv2Plus1D blocks, the
    strided temporal convs of their stages, BatchNorm3d, AdaptiveAvgPool3d) legalize with
    every op on the MDLA."""
    module = getattr(video, name)(num_classes=10).eval()
    graph = mdla_ir.from_torch(module, torch.zeros(1, 3, 4, 16, 16), name=name, path="fx")
    device = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    assert max(len(t.shape) for t in device.tensors.values() if not t.is_const) <= 4


def test_torchvision_mc3_is_bit_exact(tmp_path: Path) -> None:
    torch.manual_seed(0)
    module = video.mc3_18(num_classes=10).eval()
    result = run_module(module, (1, 3, 4, 16, 16), "mc3_18", tmp_path, "fx")
    assert result.float_error <= 1e-4
