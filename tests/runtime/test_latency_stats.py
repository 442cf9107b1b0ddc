"""`RunResult.latency_stats`: nearest-rank percentiles over the sorted timed runs, and the
median/min pair alone when the engine reported no per-run times."""

from __future__ import annotations

import pytest

from mdla_runtime.engine.target import RunResult


def _result(latency_ms: tuple[float, float], runs: tuple[float, ...]) -> RunResult:
    return RunResult([], [], latency_ms, "emu", latencies_ms=runs)


def test_percentiles_are_nearest_rank() -> None:
    runs = tuple(float(v) for v in range(1, 11))  # 1..10 ms, sorted
    stats = _result((5.5, 1.0), runs).latency_stats()
    assert stats["p90"] == 9.0  # the 9th fastest of 10
    assert stats["p99"] == 10.0
    assert stats["median"] == 5.5  # the engine's own median, not recomputed
    assert (stats["min"], stats["max"], stats["runs"]) == (1.0, 10.0, 10.0)
    assert stats["mean"] == pytest.approx(5.5)
    assert stats["std"] == pytest.approx(2.8722813)


def test_without_per_run_times_the_median_stands_for_the_one_run() -> None:
    stats = _result((3.0, 2.0), ()).latency_stats()
    assert stats["runs"] == 1.0
    assert stats["p90"] == stats["p99"] == stats["min"] == stats["max"] == 3.0
    assert stats["std"] == 0.0
