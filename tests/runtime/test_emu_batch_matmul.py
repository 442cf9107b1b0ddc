"""BATCH_MATMUL on the emulator's NPU (mdla_emu csrc/kernels/k_batch_matmul.c): a model whose
matmul stays on mtk-mdla runs through the emulator bit-exact with mdla_quant's run_int8 (adj_x,
adj_y, either side's batch broadcast, rank 3 and 4); before the kernel the emulator refused it
as unmappable."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mdla_emu import build_emulator
from mdla_ir.provenance import Provenance
from mdla_quant import run_int8
from mdla_runtime import load, save
from tests.runtime.test_cpu_batch_matmul import codes_of, floats_of, matmul_graph
from tests.runtime.test_engine_partitions import engine, outputs

CASES = [  # lhs shape, rhs shape, adj_x, adj_y
    ((2, 5, 7), (2, 7, 3), False, False),
    ((2, 7, 5), (2, 7, 3), True, False),
    ((1, 5, 7), (1, 3, 7), False, True),
    ((2, 7, 5), (2, 3, 7), True, True),
    ((3, 4, 6), (1, 6, 2), False, False),
    ((1, 6, 4), (3, 6, 5), True, False),
    ((1, 2, 9, 4), (1, 2, 4, 9), False, False),
    ((2, 3, 8, 16), (1, 1, 8, 16), False, True),
]


@pytest.mark.parametrize(("lhs", "rhs", "adj_x", "adj_y"), CASES)
def test_the_emulators_npu_is_bit_exact(
    tmp_path: Path, lhs: tuple[int, ...], rhs: tuple[int, ...], adj_x: bool, adj_y: bool
) -> None:
    g = matmul_graph(lhs, rhs, adj_x, adj_y)
    g = replace(g, provenance=Provenance(device="mtk-mdla"))
    path = save(g, tmp_path / "mm.mdla")
    assert [p.device for p in load(path).partitions] == ["mtk-mdla"]
    lib = str(build_emulator())
    for seed in range(3):
        xs = floats_of(g, codes_of(g, seed))
        code, out, err = engine(path, tmp_path, xs, "--lib", lib)
        assert code == 0, out + err
        want = run_int8(g, xs, raw=True)
        (got,) = outputs(path, tmp_path, want)
        np.testing.assert_array_equal(got, want[0])
        assert len(np.unique(got)) > 5  # not all clamped


@pytest.mark.parametrize(("lhs", "rhs", "adj_x", "adj_y"), [CASES[1], CASES[5], CASES[7]])
def test_the_rows_split_over_threads_to_the_same_bytes(
    tmp_path: Path,
    lhs: tuple[int, ...],
    rhs: tuple[int, ...],
    adj_x: bool,
    adj_y: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The batch * m output rows are cut over MDLA_EMU_THREADS (every row its own grain under
    MDLA_EMU_MIN_WORK=1), each thread with its own accumulators: 1, 2 and 3 threads give
    run_int8's bytes."""
    g = replace(matmul_graph(lhs, rhs, adj_x, adj_y), provenance=Provenance(device="mtk-mdla"))
    path = save(g, tmp_path / "mm.mdla")
    xs = floats_of(g, codes_of(g, 4))
    want = run_int8(g, xs, raw=True)
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", "1")
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("MDLA_EMU_THREADS", threads)
        code, out, err = engine(path, tmp_path, xs, "--lib", str(build_emulator()))
        assert code == 0, out + err
        (got,) = outputs(path, tmp_path, want)
        np.testing.assert_array_equal(got, want[0], err_msg=f"{threads} threads")
