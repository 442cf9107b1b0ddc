"""bench/perf.py's measuring parts (the table itself is a benchmark, not a test): the forked
child's time and peak memory, its errors, and the per-round ratios of the table's columns."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

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


PEAK_CHECK = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from tests.scripts import load_script
perf = load_script("bench_perf", sys.argv[2])

def allocate():
    block = np.ones(96 * 2**20, np.uint8)  # 96 MiB, every page touched
    assert block.sum() == block.size

_, peak = perf.in_child(allocate)
_, idle = perf.in_child(lambda: None)
print(peak, idle)
"""


def test_child_peak_memory_counts_what_it_allocates() -> None:
    """In a fresh interpreter, as the bench runs: in two full suite runs this process (after
    some 3,000 tests) measured 1.75 and 5.6 MiB for the 96 MiB array, though the test passes
    alone and with every bench test; the cause was not found, and the bench never runs there."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCH), str(root), *sys.path])}
    args = [sys.executable, "-c", PEAK_CHECK, str(root), str(BENCH / "perf.py")]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    peak, idle = map(float, done.stdout.split())
    assert 90 <= peak < 200
    assert idle < 16  # the parent's heap, inherited by the fork, is not counted


def test_child_time_is_the_function_time(perf: ModuleType) -> None:
    seconds, _ = perf.in_child(lambda: time.sleep(0.3))
    assert 0.3 <= seconds < 3.0


def test_child_cpu_time_counts_the_childs_work_not_its_waits(perf: ModuleType) -> None:
    """The compile column's clock: a sleep costs no CPU, a busy loop does."""
    slept, _ = perf.in_child(lambda: time.sleep(0.3), clock=time.process_time)
    assert slept < 0.1

    def spin() -> None:
        end = time.process_time() + 0.2
        while time.process_time() < end:
            pass

    busy, _ = perf.in_child(spin, clock=time.process_time)
    assert 0.2 <= busy < 1.0


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


def test_a_models_compiled_files_are_removed_after_its_row(
    perf: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each row compiles into a temporary folder; a folder left per model filled /tmp over
    repeated bench runs. It must exist while the row is measured and be gone after, also when
    the measurement raises."""
    seen: list[Path] = []

    def measure(spec: str, ns: list[int], rounds: int, repeat: int, tmp: Path) -> str:
        assert tmp.is_dir()
        (tmp / "m.mdla").write_bytes(b"x")
        seen.append(tmp)
        if spec == "boom":
            raise RuntimeError("the model failed")
        return spec

    monkeypatch.setattr(perf, "_bench_model", measure)
    assert perf.bench_model("tiny", [1], 1, 1) == "tiny"
    with pytest.raises(RuntimeError):
        perf.bench_model("boom", [1], 1, 1)
    assert len(seen) == 2
    assert not any(p.exists() for p in seen)


@pytest.mark.parametrize(
    ("bound", "at_least", "figures", "verdict"),
    [
        (1.0, False, [0.9, 1.0], "met"),  # the bound itself passes
        (1.0, False, [0.9, 1.01], "not met"),
        (1.7, True, [1.7, 2.0], "met"),
        (1.7, True, [1.69, 2.0], "not met"),
        (0.5, False, [0.4, float("nan"), 0.3], "met (2 of 3)"),  # a model FX PTQ refused
        (0.5, False, [0.6, float("nan")], "not met (1 of 2)"),
        (0.5, False, [float("nan")], "not measured"),
        (0.5, False, [], "not measured"),
    ],
)
def test_a_target_passes_on_its_side_of_the_bound(
    perf: ModuleType, bound: float, at_least: bool, figures: list[float], verdict: str
) -> None:
    assert perf.Target("t", bound, at_least).verdict(figures) == verdict


def test_the_targets_table_holds_every_figure_against_its_target(perf: ModuleType) -> None:
    rows = [
        perf.Row(
            "mnv2",
            compile_ratio={32: "0.22", 256: "0.30"},
            times={"emu1": [10.0, 11.0], "emu2": [5.0, 5.5], "xnnpack": [11.0, 12.0]}
            | {"run_int8": [45.0, 50.0]},
        ),
        perf.Row(
            "r18",
            compile_ratio={32: "0.57", 256: "-"},
            times={"emu1": [10.0], "emu2": [6.0], "xnnpack": [9.0], "run_int8": [30.0]},
        ),
    ]
    ada = {"plain": (50.0, 80.0), "block": (110.0, 200.0)}
    table = perf.targets_table(rows, [32, 256], ada, (16.8, 114.3))
    assert table[0].endswith("figures (mnv2, r18)")
    assert len(table) == 9  # the header and eight targets

    def row(name: str) -> str:
        (line,) = [t for t in table if t.startswith(name)]
        return " ".join(line.split())

    assert row("emulator / XNNPACK") == "emulator / XNNPACK, 1 thread <= 1 not met 0.91 / 1.11"
    assert row("compile / FX PTQ, N = 32") == "compile / FX PTQ, N = 32 <= 0.5 not met 0.22 / 0.57"
    assert row("compile / FX PTQ, N = 256") == (
        "compile / FX PTQ, N = 256 <= 0.5 met (1 of 2) 0.30 / -"
    )
    assert row("emulator 2 threads") == "emulator 2 threads / 1 thread >= 1.7 not met 2.00 / 1.67"
    assert row("run_int8") == "run_int8 / emulator (wall best-of) <= 5 met 4.52 / 3.00"
    assert row("AdaRound") == "AdaRound lite0, wall s <= 60 met 50.00 (80.0 CPU s)"
    assert (
        row("block") == "block / plain AdaRound, wall <= 2 not met 2.20 (110.0 / 50.0 s; CPU 2.50)"
    )
    assert row("ConvNeXt") == (
        "ConvNeXt-Tiny@224 engine / XNNPACK <= 1.5 met 0.15 (16.8 / 114.3 CPU ms)"
    )


def test_the_host_loop_reads_its_own_cpu_time(perf: ModuleType) -> None:
    # thread CPU, so ten times the steps read several times more even on a loaded machine
    small, big = perf.host_loop_us(20000), perf.host_loop_us(200000)
    assert 0 < small < big
    assert big / small > 4


def test_the_host_note_gives_every_round_of_every_backend(perf: ModuleType) -> None:
    note = perf.host_note({"emu1": [870.4, 1436.0], "xnnpack": [880.0, 1421.7]})
    assert note.endswith("emu1 870/1436, xnnpack 880/1422")
    row = perf.Row("m")
    assert row.host == {}
