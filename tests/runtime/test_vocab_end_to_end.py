"""Issue 31's vocabulary end to end, one small hand-written model per construct and a few
combinations (tests/models_vocab), on both import paths: every op on mtk-mdla, float IR ==
torch within 1e-4 relative, and the emulator, run_int8 and LiteRT BUILTIN_REF agree bit for bit
on the int8 outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models_vocab import CASES, end_to_end

EXPECTED = {  # what each construct legalizes to (beyond its convolutions)
    "sum_hw": {"MEAN": 1, "MUL": 2},
    "sum_channels": {"MEAN": 1, "LOGISTIC": 1, "MUL": 2},
    "amax_hw": {"MAX_POOL_2D": 1},
    "spatial_attention": {"MAX_POOL_2D": 1, "RESHAPE": 2, "CONCATENATION": 1},
    "min_centred": {"MAX_POOL_2D": 1, "MUL": 3, "ADD": 1},
    "clamp_asym": {"MUL": 2, "ADD": 2},
    "hardtanh_default": {"MUL": 1},
    "clamp_one_sided": {"MUL": 2, "ADD": 4},
    "hardtanh_0_half": {"MUL": 2},
    "expand_gate": {"MEAN": 1, "MUL": 1},
    "expand_concat": {"CONCATENATION": 3},
    "repeat_tile": {"CONCATENATION": 2, "ADD": 1},
    "adaptive_max": {"MAX_POOL_2D": 2},
    "repmixer": {"ADD": 3, "MUL": 3},
    "sub_const": {"ADD": 2, "MUL": 2},
    "pool_clamp_head": {"MAX_POOL_2D": 2, "MEAN": 1},
    "global_scalars": {"MAX_POOL_2D": 2, "MEAN": 4},  # 3 of them to a rank-0 result
    "max_branches": {"ADD": 2, "MUL": 1},  # a + relu(b + -1 * a), the RELU fused
    "min_const": {"ADD": 6, "MUL": 4},
}


@pytest.mark.parametrize("path", ["fx", "export"])
@pytest.mark.parametrize("name", list(CASES))
def test_vocabulary_end_to_end(name: str, path: str, tmp_path: Path) -> None:
    result = end_to_end(name, tmp_path, path)
    assert EXPECTED[name].items() <= result.kinds.items(), result.kinds
    assert not {"TRANSPOSE", "SUB", "SLICE"} & result.kinds.keys()
