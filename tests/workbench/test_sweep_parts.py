"""`workbench sweep`'s parts without a pool: the Wilson interval against published values,
the grid's choices, the table (resume, error rows re-run), held-out inputs kept apart from
the calibration inputs, the task deadline and a task that raises."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from mdla_compile import CompileOptions
from mdla_quant import QuantConfig
from tests.workbench.conftest import UNMAPPABLE
from workbench.errors import WorkbenchError
from workbench.held_out import wilson
from workbench.sweep import driver, grid
from workbench.sweep import task as task_module
from workbench.sweep.bundle import Holdout, bundle_of
from workbench.sweep.stats import margin
from workbench.sweep.table import Row, Table, TableError
from workbench.sweep.task import (
    HeldOutError,
    Job,
    TaskTimeoutError,
    check_disjoint,
    deadline,
    run_task,
)


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        (0, 10, 0.0, 0.2775),  # worked by hand: centre 0.13877, half-width 0.13877
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (193, 200, 0.9295, 0.9829),  # by hand; bench/README rounds: [93.0, 98.3]
    ],
)
def test_wilson_matches_hand_computed_intervals(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-4)


def test_wilson_refuses_more_successes_than_trials() -> None:
    with pytest.raises(ValueError, match="11 successes in 10"):
        wilson(11, 10)
    assert wilson(0, 0) == (0.0, 1.0)


def test_margin_is_top1_minus_runner_up_probability() -> None:
    assert margin(np.log(np.array([0.7, 0.2, 0.1]))) == pytest.approx(0.5)


def test_grid_is_methods_times_techniques_from_the_base_config() -> None:
    base = QuantConfig(rounding="single", adaround=50)
    points = grid.grid(base, "minmax,mse", "none,cle+adaround")
    assert [(p.method, p.technique) for p in points] == [
        ("minmax", "none"),
        ("minmax", "cle+adaround"),
        ("mse", "none"),
        ("mse", "cle+adaround"),
    ]
    last = points[-1].config
    assert (last.method, last.equalize, last.adaround, last.rounding) == ("mse", True, 50, "single")
    assert points[0].config.adaround == 0
    assert not points[0].config.equalize


def test_grid_names_an_unknown_technique() -> None:
    with pytest.raises(grid.GridError, match="--techniques: unknown `clé`: expected one of none"):
        grid.grid(QuantConfig(), "mse", "none,clé")


def _row(key: str, error: str = "") -> Row:
    return Row(key, "m", "mse", "none", "{}", agree_all=0.5, all_k=1, all_n=2, error=error)


def test_table_keeps_rows_and_reruns_only_error_rows(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    with Table.open(path) as t:
        t.add(_row("a"))
        t.add(_row("b", error="boom"))
    with Table.open(path) as t:
        assert t.done_keys() == {"a"}
        t.add(_row("b"))
        assert [r.key for r in t.rows()] == ["a", "b"]
        assert t.rows()[1].error == ""
        assert t.rows({"b"}) == [_row("b")]


def test_table_refuses_another_tables_file(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sweep (x TEXT)")
    with pytest.raises(TableError, match="has columns x, not a sweep's"), Table.open(path):
        pass


def test_a_held_out_input_equal_to_a_calibration_input_is_refused() -> None:
    x = np.ones((1, 3, 4, 4), np.float32)
    check_disjoint([[x]], [("other", [x + 1])])
    with pytest.raises(HeldOutError, match="held-out input `same` is also a calibration input"):
        check_disjoint([[x]], [("same", [x.copy()])])


def test_holdout_dir_sharing_a_calibration_file_is_refused(tmp_path: Path) -> None:
    calib, held = tmp_path / "calib", tmp_path / "held"
    for d in (calib, held):
        d.mkdir()
    np.save(calib / "a.npy", np.zeros((1, 3, 8, 8), np.float32))
    np.save(held / "b.npy", np.zeros((1, 3, 8, 8), np.float32))  # same bytes, other name
    options = CompileOptions(UNMAPPABLE, calib=str(calib), count=1)
    with pytest.raises(WorkbenchError, match=r"`b\.npy` is also a calibration input"):
        driver.holdout_of(options, held, None)


def test_holdout_count_takes_the_files_past_calibration(tmp_path: Path) -> None:
    for i in range(3):
        np.save(tmp_path / f"{i}.npy", np.full((1, 3, 8, 8), i, np.float32))
    options = CompileOptions(UNMAPPABLE, calib=str(tmp_path), count=2)
    assert [n for n, _ in driver.holdout_of(options, None, 1).files] == ["2.npy"]
    with pytest.raises(WorkbenchError, match="holds 1 inputs past the 2 calibration takes"):
        driver.holdout_of(options, None, 2)
    samples = CompileOptions(UNMAPPABLE, count=4)
    assert driver.holdout_of(samples, None, 2).samples == ("camera", "astronaut")


def test_deadline_raises_task_timeout() -> None:
    start = time.monotonic()
    with pytest.raises(TaskTimeoutError, match=r"timed out after 0\.2 s"), deadline(0.2):
        time.sleep(5)
    assert time.monotonic() - start < 2


def _sleep_through_one_exception() -> None:
    with contextlib.suppress(Exception):  # as `torch/__init__.py` loading optional libraries
        time.sleep(5)
    time.sleep(5)


def test_a_timeout_swallowed_once_comes_again() -> None:
    """torch's import catches every exception while it loads optional libraries: an alarm
    landing there must not leave the task without a deadline."""
    start = time.monotonic()
    with pytest.raises(TaskTimeoutError, match=r"timed out after 0\.2 s"), deadline(0.2):
        _sleep_through_one_exception()
    assert time.monotonic() - start < 3


def test_a_timeout_that_user_code_wraps_is_still_the_timeout_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The alarm can fire inside the model spec's build(), whose loader re-raises it as its own
    error: the row must still say the task timed out, not that the spec failed."""
    options = CompileOptions(UNMAPPABLE, calib="random", count=1)
    bundle = bundle_of(options, Holdout(random=1))

    def measure(*_args: object) -> dict[str, object]:
        try:
            raise TaskTimeoutError("timed out after 2 s (--task-timeout)")
        except TaskTimeoutError as exc:
            raise RuntimeError("model spec `x.py:build` failed while calling build()") from exc

    monkeypatch.setattr(task_module, "_measure", measure)
    row = run_task(Job("k", "percentile", "none", options), bundle)
    assert row.error == "timed out after 2 s (--task-timeout)"


def test_a_task_that_raises_is_an_error_row() -> None:
    options = CompileOptions(UNMAPPABLE, calib="random", count=1)
    bundle = bundle_of(options, Holdout(random=1))
    row = run_task(Job("k", "percentile", "none", options), bundle)
    assert row.key == "k"
    assert row.agree_all is None
    assert "GELU" in row.error or "erf" in row.error.lower(), row.error
