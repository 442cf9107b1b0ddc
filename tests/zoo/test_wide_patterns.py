"""The patterns the wider third-party set met (tests/models_wide.py), each end to end as a user
compiles it (tests/fresh.py's run_case: the emulator bit-exact with run_int8), on the device
the fix puts it: a pattern legalized into MDLA ops must not need `--cpu` any more."""

from __future__ import annotations

import pytest

from tests.fresh import run_case

EXPECTED = {
    "upsampling_adaptive_head": "npu",
    "signed_stem_pool": "npu",
    "space_to_depth_view": "npu",
    "token_mlp_decoder": "npu",
    "class_token": "cpu",  # the tokens' TRANSPOSE on the CPU; the concatenation on the MDLA
    "coord_channels": "npu",
    "rotated_box_head": "cpu",  # COS and SIN as int8 tables in a CPU partition
    "split_attention": "npu",
    "split_attention_radix4": "npu",
    "selective_kernel": "npu",
    "uneven_adaptive_pool": "npu",
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_pattern_compiles_bit_exact_where_expected(name: str) -> None:
    verdict = run_case(name)
    assert verdict.verdict == EXPECTED[name], f"{name}: {verdict.verdict}: {verdict.message}"
