"""bench/accuracy.py's `CLE+Ada+a16` technique: its QuantConfig is CLE + AdaRound without a16,
and `with_a16` adds what `--a16 auto` chooses on the compile's graph and calibration, with the
gains and the request recorded (as `workbench compile --a16 auto` does)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdla_compile import CompileOptions
from mdla_compile import compile as compile_model
from mdla_compile.a16 import choose_a16
from mdla_quant import QuantConfig
from mdla_zoo import load_model
from tests.scripts import load_script
from tests.workbench.conftest import TINY

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_the_a16_technique_adds_the_auto_choice_to_cle_and_adaround() -> None:
    bench = load_script("bench_accuracy", BENCH / "accuracy.py")
    config = bench.setting_of("minmax", "CLE+Ada+a16", 7)
    assert config == QuantConfig(method="minmax", adaround=7, equalize=True)
    model = load_model(TINY)
    rng = np.random.default_rng(0)
    shape = tuple(model.example_inputs[0].shape)
    calib = [[rng.uniform(-1, 1, shape).astype(np.float32)] for _ in range(8)]
    first = compile_model(CompileOptions(model, calib=calib, count=8, quant=QuantConfig()))
    chosen = bench.with_a16(first, config, "CLE+Ada+a16")
    picked = choose_a16(first.device_graph, first.calibration, config, 0.25)
    assert picked  # the tiny model has tensors worth int16
    assert chosen.a16 == tuple(c.tensor for c in picked)
    assert chosen.a16_gain_db == tuple(round(c.gain_db, 4) for c in picked)
    assert chosen.a16_mode == "auto"
    assert bench.with_a16(first, config, "CLE+AdaRound") is config
    joint = bench.with_a16(first, config, "CLE+Ada+joint")
    chosen_jointly = choose_a16(first.device_graph, first.calibration, config, 0.25, joint=True)
    assert joint.a16 == tuple(c.tensor for c in chosen_jointly)
    assert joint.a16_mode == "joint"
    refit = bench.with_a16(first, config, "CLE+Ada+refit50")
    chosen = choose_a16(first.device_graph, first.calibration, config, 0.5, refit=True)
    assert refit.a16 == tuple(c.tensor for c in chosen)
    assert refit.a16_mode == "refit:50%"
    assert bench.setting_of("minmax", "CLE+Ada+folds", 7) == config
    folds = bench.with_a16(first, config, "CLE+Ada+folds")
    chosen = choose_a16(first.device_graph, first.calibration, config, 0.25, True, True, "folds")
    assert folds.a16 == tuple(c.tensor for c in chosen)
    assert folds.a16_mode == "refit"
    assert bench.setting_of("percentile", "out16", 7) == QuantConfig(method="percentile")
    logits = bench.with_a16(first, QuantConfig(), "out16")
    assert logits.a16 == tuple(first.device_graph.outputs)
    assert logits.a16_mode == ",".join(first.device_graph.outputs)


def test_the_techniques_table_prints_a_row_per_technique(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table runs end to end (it compiles once and re-quantizes per technique), the a16
    row with its chosen tensors and its int16 share (the none row's is 0)."""
    monkeypatch.syspath_prepend(str(BENCH))  # the a16 row imports its sibling emulated.py
    bench = load_script("bench_accuracy", BENCH / "accuracy.py")
    bench.techniques([TINY], 4, 4, 1, "crops", ["minmax"], ["none", "CLE+Ada+a16"])
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(f"{TINY} minmax ")]
    assert [r[2] for r in rows] == ["none", "CLE+Ada+a16"]
    assert "CLE+Ada+a16: " in out
    header = next(line.split() for line in out.splitlines() if line.startswith("model "))
    assert header[-9:] == ["CPU", "s", "int16", "gap", "σ", "emu", "ms", "emu", "×"]
    shares = [float(r[-4].rstrip("%")) for r in rows]
    assert shares[0] == 0.0
    assert 0.0 < shares[1] <= 25.0
    assert all(float(r[-5]) >= 0.0 for r in rows)  # CPU seconds (a cached compile takes ~0)
    # the emulated latency: none for the all-int8 row, the emulator's for the a16 one
    assert rows[0][-2:] == ["-", "-"]
    assert float(rows[1][-2]) > 0.0
    assert rows[1][-1].endswith("x")
    assert float(rows[1][-1][:-1]) > 0.0
