"""bench/sweep.py's idle preset and its verdict lines (the figures are a benchmark, not a test):
the preset names the lite0 grid with Ray, a flag given overrides it, and the ratio lines
compare each run with the first and Ray with the fastest local run against the issue's targets."""

from __future__ import annotations

from pathlib import Path

from tests.scripts import load_script

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_the_idle_preset_sets_the_grid_and_flags_override_it() -> None:
    bench = load_script("bench_sweep", BENCH / "sweep.py")
    a = bench.arguments(["--preset", "idle"])
    assert (a.model, a.calib, a.count, a.holdout_count) == ("efficientnet_lite0", "samples", 3, 2)
    assert (a.methods, a.techniques, a.a16) == (
        "minmax,percentile,mse,entropy",
        "none,cle",
        "none;auto:10%;auto:25%",
    )
    assert (a.runs, a.ray, a.tasks) == ("1,2", True, True)
    mine = bench.arguments(["--preset", "idle", "--runs", "2", "--no-ray"])
    assert (mine.runs, mine.ray, mine.model) == ("2", False, "efficientnet_lite0")
    assert bench.arguments([]).model.endswith("tiny_model.py:tiny")


def test_the_ratio_lines_state_the_targets() -> None:
    bench = load_script("bench_sweep", BENCH / "sweep.py")
    one = bench.Run("1 worker", 200.0, 100.0, 110.0, 16, 0, (0.1, 1.0))
    two = bench.Run("2 workers", 100.0, 104.0, 120.0, 16, 0, (1.0, 2.0))
    ray = bench.Run("ray", 110.0, 99.0, None, 16, 0, (2.0, 2.0))
    assert bench.ratios([one, two, ray]) == [
        "2 workers vs 1 worker: wall 2.00x faster (target >= 1.8x), task CPU 1.04x",
        "ray vs 1 worker: wall 1.82x faster, task CPU 0.99x",
        "ray vs 2 workers: wall +10.0% (target within 15%), task CPU 99.0 s against 104.0 s",
    ]
    run = bench.Run("2 workers", 1.0, 1.0, 1.0, 2, 0, (0, 0), (("a", 3.0, 1.0), ("b", 12.0, 9.0)))
    assert bench.task_lines(run)[0] == "2 workers: 2 tasks, 1 of >= 10 s CPU"
    assert bench.task_lines(run)[1].split() == ["12.0", "s", "CPU", "compile", "9.0", "s", "b"]
