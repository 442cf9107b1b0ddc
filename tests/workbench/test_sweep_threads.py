"""Each worker of the sweep's pool (and of validate's shards) runs its share of the cores: torch,
numpy's OpenBLAS (which reads its variable when numpy loads, before the pool's initializer
runs) and the emulator's variables, with 2 workers half the cores each, with 1 worker all of
them; the parent, which imported torch first, keeps its own setting and environment."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from workbench.sweep import threads
from workbench.sweep.pool import spawned

VARS = (*threads.LIBRARIES, *threads.EMULATOR)


def _openblas_threads() -> int:
    """numpy's OpenBLAS thread count, from the library numpy loaded."""
    libs = Path(np.__file__).parent.parent / "numpy.libs"
    (path,) = libs.glob("libscipy_openblas*.so")
    lib = ctypes.CDLL(str(path))
    return int(lib.scipy_openblas_get_num_threads64_())


def _seen(_item: int) -> tuple[int, int, dict[str, str | None]]:
    """In a pool worker: what it runs with."""
    return torch.get_num_threads(), _openblas_threads(), {v: os.environ.get(v) for v in VARS}


def test_environment_shares_out_the_cores_and_keeps_smaller_settings() -> None:
    assert threads.environment(2, {}) == dict.fromkeys(threads.LIBRARIES, "2")
    user = {"OMP_NUM_THREADS": "1", "MDLA_EMU_THREADS": "4", "MKL_NUM_THREADS": "x"}
    got = threads.environment(2, user)
    assert got == {
        "OMP_NUM_THREADS": "1",  # the user's smaller setting kept
        "MKL_NUM_THREADS": "2",  # not a count: ours
        "OPENBLAS_NUM_THREADS": "2",
        "MDLA_EMU_THREADS": "2",  # capped; MDLA_CPU_THREADS unset stays unset (one thread)
    }


@pytest.mark.parametrize(("workers", "expected"), [(2, 1), (1, 2)])
def test_pool_workers_run_their_share_of_the_cores(
    monkeypatch: pytest.MonkeyPatch, workers: int, expected: int
) -> None:
    monkeypatch.setattr(threads, "cores", lambda: 2)  # the parent decides each share
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MDLA_EMU_THREADS", "3")
    parent = torch.get_num_threads()
    with spawned(workers, 2, b"") as pool:
        seen = list(pool.map(_seen, range(2)))
    for torch_threads, blas_threads, env in seen:
        assert torch_threads == expected
        assert blas_threads == expected
        assert {v: env[v] for v in threads.LIBRARIES} == dict.fromkeys(
            threads.LIBRARIES, str(expected)
        )
        assert env["MDLA_EMU_THREADS"] == str(min(3, expected))
        assert env["MDLA_CPU_THREADS"] is None
    assert torch.get_num_threads() == parent
    assert {v: os.environ.get(v) for v in VARS} == {
        **dict.fromkeys(VARS),
        "MDLA_EMU_THREADS": "3",
    }


def test_limit_sets_torch_in_a_process_that_imported_it(monkeypatch: pytest.MonkeyPatch) -> None:
    before = torch.get_num_threads()
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    try:
        threads.limit(1)
        assert torch.get_num_threads() == 1
        assert os.environ["OMP_NUM_THREADS"] == "1"
    finally:
        torch.set_num_threads(before)


def test_scoped_env_sets_unsets_and_restores_every_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MDLA_T_KEPT", "before")
    monkeypatch.setenv("MDLA_T_GONE", "there")
    monkeypatch.delenv("MDLA_T_NEW", raising=False)
    seen: dict[str, str | None] = {}

    def inside() -> None:
        with threads.scoped_env({"MDLA_T_KEPT": "inside", "MDLA_T_NEW": "1"}, ("MDLA_T_GONE",)):
            seen.update(
                {k: os.environ.get(k) for k in ("MDLA_T_KEPT", "MDLA_T_NEW", "MDLA_T_GONE")}
            )
            raise RuntimeError("restored on an error too")

    with pytest.raises(RuntimeError):
        inside()
    assert seen == {"MDLA_T_KEPT": "inside", "MDLA_T_NEW": "1", "MDLA_T_GONE": None}
    assert os.environ["MDLA_T_KEPT"] == "before"
    assert os.environ["MDLA_T_GONE"] == "there"
    assert "MDLA_T_NEW" not in os.environ
