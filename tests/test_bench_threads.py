"""bench/threads.py's hand-off chain (the figures are a benchmark, not a test): the chain is n
ADDs whose every op splits, the emulator computes it as run_int8 does at both thread counts,
and the table has one line per way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdla_quant import run_int8
from mdla_runtime import load, open_target, save
from tests.scripts import load_script

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_the_chain_splits_and_matches_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = load_script("bench_threads", BENCH / "threads.py")
    g = bench.add_chain(5, (1, 8, 8, 32))
    assert [op.kind.name for op in g.ops] == ["ADD"] * 5
    x = np.random.default_rng(0).uniform(-3, 3, (1, 8, 8, 32)).astype(np.float32)
    (want,) = run_int8(g, [x], raw=True)
    manifest = load(save(g, tmp_path / "adds.mdla"))
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", "1")
    for threads in ("1", "2"):
        monkeypatch.setenv("MDLA_EMU_THREADS", threads)
        got = open_target("emu").run(manifest, x, repeat=2).raw_outputs[0]
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), threads


def test_the_hand_off_table_has_a_line_per_way(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("bench_threads", BENCH / "threads.py")
    bench.hand_off(4, 8, 4)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[0] for line in lines[2:]] == list(bench.WAYS)


def test_the_model_rows_run_torch_on_one_thread(capsys: pytest.CaptureFixture[str]) -> None:
    """Each model's compile runs in a forked child; after torch has used its OpenMP team in
    the parent (the batch-norm recalibration), a forked child waits forever at that team's
    next barrier (seen: the idle run hung in `gomp_team_barrier_wait_end`)."""
    import torch

    bench = load_script("bench_threads", BENCH / "threads.py")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        bench.models([], 1)  # the header only: no model to build
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    header = capsys.readouterr().out
    assert "2t/1t" in header
    # no CPU-derived speed-up: it reads 2.0 when the second thread does nothing
    assert "by CPU" not in header
