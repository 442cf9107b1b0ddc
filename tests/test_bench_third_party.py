"""bench/third_party.py's verdicts: what a row says is what import, legalize and placement did;
a crash is a row naming it, never the end of the table."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch import nn

import mdla_legalize
from tests.scripts import load_script

PATH = Path(__file__).resolve().parents[1] / "bench" / "third_party.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script("bench_third_party", PATH)


def test_verdicts_of_a_mapping_a_placed_and_a_refused_model(bench: ModuleType) -> None:
    """On the fx path, where the `trace` verdict (what fx cannot follow) exists."""
    maps = bench.judge("timm:lcnet_050", side=64, path="fx")
    assert (maps.verdict, maps.partitions, maps.message) == ("maps", 1, "")
    placed = bench.judge("timm:convnext_atto", side=64, path="fx")
    assert placed.verdict == "maps with --cpu GELU,LAYER_NORM"  # its permutes fold
    assert placed.partitions is not None
    assert placed.partitions > 2
    refused = bench.judge("smp:FPN/resnet18", side=64, path="fx")
    assert refused.verdict == "trace"
    assert "output_stride" in refused.message
    rows = [maps, placed, refused]
    assert bench.summary(rows) == (
        "1 of 3 map fully on mtk-mdla, 1 more with --cpu naming the kinds that leave it, 1 refused"
    )
    assert bench.render(refused).startswith("| smp:FPN/resnet18 (64) | - | trace | - | ")
    assert maps.path == "fx"


def test_path_auto_says_which_importer_took_it(bench: ModuleType) -> None:
    """timm's Conv2dSame defeats torch.fx; torch.export captures it (auto's first choice)."""
    row = bench.judge("timm:tf_mobilenetv3_small_minimal_100", side=64, path="auto")
    assert (row.path, row.verdict) == ("export", "maps")
    assert bench.render(row).startswith("| timm:tf_mobilenetv3_small_minimal_100 (64) | export |")


def test_a_crash_is_a_row(bench: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*_a: object, **_k: object) -> None:
        raise KeyError("stages.0.blocks.0.gamma")

    monkeypatch.setattr(mdla_legalize, "legalize", crash)
    row = bench.judge("timm:lcnet_050", side=64)
    assert row.verdict == "internal error"
    assert row.message == "KeyError: 'stages.0.blocks.0.gamma'"


class _Gate(nn.Module):
    """A comparison with a tensor that broadcasts (`y > y.mean()`) picks between two branches
    (`torch.where`): SELECT takes tensors of one shape on either path, and fx traces it (so the
    refusal is the ATen importer's, not a trace's)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return torch.where(y > y.mean(), y, y * 0.5)


def test_a_model_export_captures_but_cannot_map_is_an_import_refusal(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "build", lambda *_a: (_Gate().eval(), (torch.rand(1, 3, 16, 16),)))
    row = bench.judge("timm:gate", side=16)
    assert (row.path, row.verdict) == ("-", "import")
    assert row.message.startswith("torch.export captured it, but the ATen importer does not map")


def test_the_bit_exact_column_compiles_and_emulates(bench: ModuleType) -> None:
    """`--exact`: a model that maps is compiled and its emulator run equals run_int8; one that
    does not map gets no compile (`-`)."""
    row = bench.judge("timm:lcnet_050", side=64, path="auto", exact=True)
    assert (row.verdict, row.exact) == ("maps", "yes")
    assert bench.render(row).startswith(f"| timm:lcnet_050 (64) | {row.path} | maps | 1 | yes | ")
    assert bench.summary([row]).endswith("; 1 of 1 compiled bit-exact (emulator == run_int8)")
    plain = bench.judge("timm:lcnet_050", side=64, path="auto")
    assert plain.exact == "-"
    assert "compiled bit-exact" not in bench.summary([plain])


def test_a_difference_is_a_no_and_a_failure_an_error(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "emulated_equals_int8", lambda *_a: False)
    assert bench.judge("timm:lcnet_050", side=64, exact=True).exact == "NO"

    def fail(*_a: object) -> bool:
        raise RuntimeError("emulator refused it")

    monkeypatch.setattr(bench, "emulated_equals_int8", fail)
    row = bench.judge("timm:lcnet_050", side=64, exact=True)
    assert (row.exact, row.message) == ("error", "RuntimeError: emulator refused it")
