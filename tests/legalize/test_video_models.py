"""Video models (strided and dilated temporal convs, BatchNorm3d, grouped and channel-wise
Conv3d, an R(2+1)D block, 3-D max pools over time) map whole on the MDLA as 2-D ops over
frames, bit-exact emulator == run_int8 == LiteRT, on both import paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models_video import CASES, end_to_end


@pytest.mark.parametrize("path", ["fx", "export"])
@pytest.mark.parametrize("name", list(CASES))
def test_video_model_maps_and_is_bit_exact(name: str, path: str, tmp_path: Path) -> None:
    result = end_to_end(name, tmp_path, path)
    assert "CONV_3D" not in result.kinds
    assert not {"MAX_POOL_3D", "AVERAGE_POOL_3D"} & set(result.kinds)
    assert result.float_error <= 1e-4
