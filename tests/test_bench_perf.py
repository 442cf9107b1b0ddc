"""bench/perf.py's measuring parts (the table itself is a benchmark, not a test): the forked
child's time and peak memory, its errors, and the per-round ratios of the table's columns."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.scripts import load_script

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def perf() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))  # perf.py imports its siblings accuracy.py and runtime.py
    try:
        yield load_script("bench_perf", BENCH / "perf.py")
    finally:
        sys.path.remove(str(BENCH))


def test_child_peak_memory_counts_what_it_allocates(perf: ModuleType) -> None:
    def allocate() -> None:
        block = np.ones(96 * 2**20, np.uint8)  # 96 MiB, every page touched
        assert block.sum() == block.size

    seconds, peak = perf.in_child(allocate)
    assert 90 <= peak < 200
    assert seconds > 0
    _, idle = perf.in_child(lambda: None)
    assert idle < 16  # the parent's heap, inherited by the fork, is not counted


def test_child_time_is_the_function_time(perf: ModuleType) -> None:
    seconds, _ = perf.in_child(lambda: time.sleep(0.3))
    assert 0.3 <= seconds < 3.0


def test_child_errors_come_back_named(perf: ModuleType) -> None:
    def fail() -> None:
        raise ValueError("no calibration inputs")

    with pytest.raises(RuntimeError, match="ValueError: no calibration inputs"):
        perf.in_child(fail)


def test_a_child_that_dies_without_reporting_is_an_error(perf: ModuleType) -> None:
    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)  # no report, no exception to send back

    with pytest.raises(RuntimeError, match="child died"):
        perf.in_child(die)


def test_ratios_are_medians_of_per_round_ratios(perf: ModuleType) -> None:
    row = perf.Row("m", times={"emu1": [10.0, 30.0, 12.0], "xnnpack": [5.0, 5.0, 4.0]})
    assert row.ratio("emu1", "xnnpack") == "3.00"  # ratios 2, 6, 3: median 3 (not 17.3 / 4.7)
    assert row.ratio("emu1", "torch_int8") == "-"  # a backend that refused the model
