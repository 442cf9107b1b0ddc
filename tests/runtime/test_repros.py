"""CI replays the second audit's repros (`repros.py`): both readers give each file its verdict,
the engine fuzz harness (reader, planners, emulator, cpu device, under ASan + UBSan) runs them
all clean, and the cpu device computes the overflowing float region as the Python definition
does (NaN where EXP meets NaN, the same bits)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdla_quant import run_int8
from mdla_runtime import Budget, open_target, save
from mdla_runtime.testing_float import FEATURES, STEPS
from tests.runtime.fuzzing import run_driver
from tests.runtime.repros import overflow_graph, repros
from tests.runtime.test_manifest_semantic import both

REPROS = repros()


def _write(tmp: Path, name: str) -> Path:
    path = tmp / f"{name}.mdla"
    path.write_bytes(REPROS[name][0])
    return path


@pytest.mark.parametrize("name", list(REPROS))
def test_both_readers_give_each_repro_its_verdict(name: str, tmp_path: Path) -> None:
    py, c = both(_write(tmp_path, name), Budget())
    assert py == c
    want = REPROS[name][1]
    assert (py if py == "ok" else py[0]) == want  # type: ignore[index]


def test_the_fuzz_harness_runs_every_repro_clean(tmp_path: Path) -> None:
    proc = run_driver([_write(tmp_path, name) for name in REPROS])
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_the_cpu_device_runs_the_overflowing_gru_as_its_definition(tmp_path: Path) -> None:
    """mdla-engine's cpu device on the float region whose products overflow: NaN outputs, the
    same float32 bits as mdla_quant's definition (EXP is total on the NaN it meets)."""
    graph = overflow_graph()
    path = save(graph, tmp_path / "overflow.mdla")
    x = np.linspace(-2, 2, STEPS * FEATURES, dtype=np.float32).reshape(STEPS, FEATURES)
    got = open_target("emu").run(path, [x]).outputs[0]
    want = run_int8(graph, [x])[0]
    assert np.isnan(got).any()
    assert got.view(np.uint32).tobytes() == np.asarray(want, np.float32).view(np.uint32).tobytes()
