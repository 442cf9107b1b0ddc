"""bench/emulated.py: the a16 rows' emulated latency beside the all-int8 twin's, the two
manifests run interleaved, each figure the least of its rounds, the ratio of CPU per image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_quant import QuantConfig, quantize
from tests.quant.test_sensitivity import inputs, mlp
from tests.scripts import load_script

BENCH = Path(__file__).resolve().parents[1] / "bench"


class Clocked:
    """A target whose runs take `costs[name][round]` CPU seconds on `clock` and report
    `walls[name][round]` ms; it records which manifest ran, in order."""

    def __init__(self, costs: dict[str, list[float]], walls: dict[str, list[float]]) -> None:
        self.costs, self.walls, self.clock = costs, walls, 0.0
        self.order: list[tuple[str, int, int]] = []

    def run(self, manifest: Any, x: Any, repeat: int = 1, warmup: int = 0) -> Any:
        name = Path(manifest.path).stem
        k = sum(1 for n, _, _ in self.order if n == name)
        self.order.append((name, repeat, warmup))
        self.clock += self.costs[name][k]

        class Result:
            latency_ms = (self.walls[name][k], 0.0)

        return Result()


def test_the_two_manifests_run_interleaved_and_the_least_round_counts() -> None:
    emulated = load_script("bench_emulated", BENCH / "emulated.py")
    graph = mlp()
    int8 = quantize(graph, inputs(8, 1), QuantConfig(method="minmax"))
    a16 = quantize(graph, inputs(8, 1), QuantConfig(method="minmax", a16=("h", "h2")))
    # 6 images a run (5 timed, 1 untimed): int8 12 then 6 ms of CPU, a16 18 then 30
    target = Clocked(
        {"int8": [0.072, 0.036], "a16": [0.108, 0.180]}, {"int8": [9, 4], "a16": [7, 8]}
    )
    lat = emulated.emulated(a16, int8, inputs(1, 2)[0][0], 5, target, lambda: target.clock)
    assert target.order == [("int8", 5, 1), ("a16", 5, 1)] * emulated.ROUNDS
    assert lat.ms == 7.0
    assert lat.cpu_ms == pytest.approx(18.0)
    assert lat.ratio == pytest.approx(3.0)  # 18 against int8's least, 6


def test_on_the_emulator_the_a16_graph_costs_cpu() -> None:
    emulated = load_script("bench_emulated", BENCH / "emulated.py")
    graph = mlp()
    int8 = quantize(graph, inputs(8, 1), QuantConfig(method="minmax"))
    a16 = quantize(graph, inputs(8, 1), QuantConfig(method="minmax", a16=("h", "h2")))
    lat = emulated.emulated(a16, int8, np.asarray(inputs(1, 2)[0][0]), 2)
    assert lat.ms > 0.0
    assert lat.cpu_ms > 0.0
    assert np.isfinite(lat.ratio)
    assert lat.ratio > 0.0
