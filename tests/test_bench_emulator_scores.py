"""bench/emulator_scores.py: the accuracy table's int8 side scored on the C emulator, its outputs
those of `run_int8` byte for byte, the first inputs checked in the bench and a difference fatal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_compile import CompileOptions
from mdla_compile import compile as compile_model
from mdla_ir import Graph
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_zoo import load_model
from tests.quant.test_sensitivity import inputs, mlp
from tests.scripts import load_script
from tests.workbench.conftest import TINY

BENCH = Path(__file__).resolve().parents[1] / "bench"
Array = np.ndarray[Any, Any]


@pytest.fixture(scope="module")
def tiny() -> tuple[Graph, list[Array]]:
    """The tiny CNN compiled with the default config, and 6 held-out inputs."""
    model = load_model(TINY)
    rng = np.random.default_rng(0)
    shape = tuple(model.example_inputs[0].shape)
    calib = [[rng.uniform(-1, 1, shape).astype(np.float32)] for _ in range(8)]
    compiled = compile_model(CompileOptions(model, calib=calib, count=8, quant=QuantConfig()))
    return compiled.qgraph, [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(6)]


def test_the_emulator_scores_are_run_int8s_outputs(tiny: tuple[Graph, list[Array]]) -> None:
    scores = load_script("bench_emulator_scores", BENCH / "emulator_scores.py")
    q, xs = tiny
    got = scores.emulator_scores(q, xs, check=0)  # nothing checked inside: compared here
    assert got.checked == 0
    assert got.cpu_s > 0.0
    assert len(got.outputs) == len(xs)
    for out, x in zip(got.outputs, xs, strict=True):
        want = run_int8(q, [x])
        assert [o.dtype for o in out] == [w.dtype for w in want]
        for o, w in zip(out, want, strict=True):
            assert o.shape == w.shape
            assert o.tobytes() == w.tobytes()


def test_an_int16_output_scores_as_run_int8_does() -> None:
    """The logits held in int16 (a16 on the graph output) come back dequantized the same."""
    scores = load_script("bench_emulator_scores", BENCH / "emulator_scores.py")
    graph = mlp()
    q = quantize(graph, inputs(16, 1), QuantConfig(method="minmax", a16=("logits",)))
    xs = [x for (x,) in inputs(5, 2)]
    got = scores.emulator_scores(q, xs, check=len(xs))
    assert got.checked == len(xs)
    for out, x in zip(got.outputs, xs, strict=True):
        assert out[0].tobytes() == run_int8(q, [x])[0].tobytes()


def test_the_first_inputs_are_checked_and_a_difference_stops_the_bench(
    tiny: tuple[Graph, list[Array]],
) -> None:
    scores = load_script("bench_emulator_scores", BENCH / "emulator_scores.py")
    q, xs = tiny
    seen: list[int] = []

    def counted(graph: Graph, x: list[Array]) -> list[Array]:
        seen.append(next(k for k, y in enumerate(xs) if y is x[0]))
        return run_int8(graph, x)

    assert scores.emulator_scores(q, xs, check=3, reference=counted).checked == 3
    assert seen == [0, 1, 2]

    def off_by_one_step(graph: Graph, x: list[Array]) -> list[Array]:
        out = run_int8(graph, x)
        if x[0] is xs[1]:  # the second input's first output value one step off
            scale = graph.tensors[graph.outputs[0]].quant.scale[0]
            out[0] = out[0].copy()
            out[0].flat[0] += np.float32(scale)
        return out

    with pytest.raises(scores.ScoreMismatchError, match=r"input 1, output 0: .* differ in"):
        scores.emulator_scores(q, xs, check=2, reference=off_by_one_step)
    # past the checked inputs nothing is compared (the reference never sees input 1)
    assert scores.emulator_scores(q, xs, check=1, reference=off_by_one_step).checked == 1
