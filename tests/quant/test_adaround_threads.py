"""AdaRound on the two cores: its GEMMs on one OpenBLAS thread (whose idle threads would spin),
the second core given work by soft_rounding's own pool, the results bit for bit unchanged."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from mdla_quant import QuantConfig, quantize, soft_rounding
from mdla_quant import adaround as adaround_module
from mdla_quant.adaround import adaround
from mdla_quant.blas import one_blas_thread, openblas
from tests.quant.test_block_reconstruction import mbconv, samples


@pytest.fixture
def two_blas_threads() -> Iterator[tuple[object, object]]:
    api = openblas()
    assert api is not None, "numpy's OpenBLAS was not found among the mapped libraries"
    get, put = api
    before = get()
    put(2)
    yield get, put
    put(before)


def test_one_blas_thread_is_set_and_restored(two_blas_threads: tuple[object, object]) -> None:
    get = openblas()[0]  # type: ignore[index]
    with one_blas_thread():
        assert get() == 1
    assert get() == 2
    with pytest.raises(ValueError, match="inside"), one_blas_thread():
        raise ValueError("inside")
    assert get() == 2


def test_adaround_fits_on_one_blas_thread(
    two_blas_threads: tuple[object, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    get = openblas()[0]  # type: ignore[index]
    seen: list[int] = []
    forward = adaround_module._Layer.forward

    def spy(self: adaround_module._Layer, w: np.ndarray, cols: list[np.ndarray]) -> np.ndarray:
        seen.append(get())
        return forward(self, w, cols)

    monkeypatch.setattr(adaround_module._Layer, "forward", spy)
    g, calib = mbconv(seed=3), samples(4, seed=4)
    adaround(g, quantize(g, calib, QuantConfig(method="minmax")), calib, iters=5, rows=64)
    assert seen
    assert set(seen) == {1}
    assert get() == 2


@pytest.mark.parametrize(("rows", "inner", "cols"), [(256, 96, 1000), (37, 5, 18), (300, 1, 70)])
def test_the_gemm_cut_by_columns_is_the_whole_gemm(
    rows: int, inner: int, cols: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(rows)
    a = rng.standard_normal((rows, inner)).astype(np.float32)
    b = rng.standard_normal((inner, cols)).astype(np.float32)
    calls: list[tuple[int, ...]] = []
    real = np.matmul

    def counted(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        calls.append(y.shape)
        result: np.ndarray = real(x, y, out=out)
        return result

    monkeypatch.setattr(soft_rounding, "MIN_MACS", 1)
    monkeypatch.setattr(soft_rounding.np, "matmul", counted)
    results = []
    for n in (1, 2, 3):
        monkeypatch.setattr(soft_rounding, "threads", lambda n=n: n)
        with one_blas_thread():
            results += [soft_rounding.matmul(a, b), soft_rounding.matmul(a, np.asfortranarray(b))]
    # the same bits on any thread count (the cut follows the shapes), and on an SGEMM whose
    # column sums do not depend on the cut (AVX-512 OpenBLAS) the whole product's bits too
    assert len({r.tobytes() for r in results}) == 1
    if _columns_invariant():
        np.testing.assert_array_equal(results[0], a @ b)
    else:
        np.testing.assert_allclose(results[0], a @ b, rtol=1e-5, atol=1e-5)
    parts = min(soft_rounding.PARTS, cols // soft_rounding.COLUMNS)  # one: the plain `a @ b`
    assert len(calls) == (6 * parts if parts > 1 else 0)
    assert sum(shape[1] for shape in calls) == (6 * cols if parts > 1 else 0)


def _columns_invariant() -> bool:
    """Whether numpy's SGEMM gives a column the same sum in a part of the columns."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 96)).astype(np.float32)
    b = rng.standard_normal((96, 200)).astype(np.float32)
    return (a @ b[:, 16:]).tobytes() == (a @ b)[:, 16:].tobytes()


@pytest.mark.parametrize(
    ("rows", "size", "parts"), [(10, 10, 1), (10, 1 << 20, 3), (2, 1 << 20, 2)]
)
def test_rows_are_cut_over_the_threads_once_each(
    rows: int, size: int, parts: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(soft_rounding, "threads", lambda: 3)
    seen: list[slice] = []
    soft_rounding.by_rows(seen.append, rows, size)
    assert len(seen) == parts
    assert sorted(i for r in seen for i in range(rows)[r]) == list(range(rows))


def test_the_caller_takes_the_first_share_of_a_cut() -> None:
    """`spread` runs the first lane on the calling thread and each other lane as one task of
    the pool, and gives the results in the jobs' order."""
    import threading

    def job(k: int) -> tuple[int, str]:
        return k, threading.current_thread().name.split("_")[0]

    jobs = [lambda k=k: job(k) for k in range(5)]
    got = soft_rounding.spread(jobs, 2)
    assert [k for k, _ in got] == list(range(5))
    assert [name for _, name in got] == ["MainThread", "soft-rounding"] * 2 + ["MainThread"]


def test_a_cut_from_a_pool_thread_runs_inline() -> None:
    """A job that cuts its own work (a pool thread calling `spread`) runs it on its own thread:
    the pool never waits for itself, so there is no deadlock however small the pool."""
    import threading

    def inner() -> set[str]:
        names = soft_rounding.spread([lambda: threading.current_thread().name] * 4, 2)
        return set(names)

    _, names = soft_rounding.spread([lambda: set(), inner], 2)  # `inner` on the pool's lane
    assert len(names) == 1
    assert names.pop().startswith("soft-rounding")


def test_a_failing_share_waits_for_the_others() -> None:
    """When the caller's share raises, the pool's shares (writing the caller's arrays) have
    finished before the error propagates."""
    import time

    done: list[int] = []

    def slow() -> None:
        time.sleep(0.05)
        done.append(1)

    def fail() -> None:
        raise ValueError("first share")

    with pytest.raises(ValueError, match="first share"):
        soft_rounding.spread([fail, slow], 2)
    assert done == [1]
