"""bench/weight_choices.py: a row per model and setting, each setting a QuantConfig."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdla_quant import QuantConfig
from tests.scripts import load_script
from tests.workbench.conftest import TINY

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_each_setting_is_a_valid_config() -> None:
    bench = load_script("bench_weight_choices", BENCH / "weight_choices.py")
    for options in bench.SETTINGS.values():
        QuantConfig(**options)
    assert bench.SETTINGS["none"] == {}


def test_the_table_prints_a_row_per_setting(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("bench_weight_choices", BENCH / "weight_choices.py")
    bench.table([TINY], ["none", "nearest", "bias"], 2)
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [r[1] for r in rows] == ["none", "nearest", "bias"]
    assert all(r[0] == TINY and float(r[-1]) >= 0 for r in rows)


def test_an_unknown_setting_is_a_usage_error() -> None:
    bench = load_script("bench_weight_choices", BENCH / "weight_choices.py")
    with pytest.raises(SystemExit) as err:
        bench.main(["--only", "none,sq"])
    assert err.value.code == 2
