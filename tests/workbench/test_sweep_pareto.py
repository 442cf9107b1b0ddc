"""The sweep's Pareto front and `--pick` on hand-made rows, and the plot's PNG."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from workbench.sweep import pareto
from workbench.sweep.plot import pareto_png
from workbench.sweep.table import Row


def row(name: str, agree: float, latency: float, compile_s: float, error: str = "") -> Row:
    return Row(
        name,
        "m",
        name,
        "none",
        "{}",
        agree_all=None if error else agree,
        all_k=round(agree * 100),
        all_n=100,
        latency_ms=latency,
        compile_s=compile_s,
        error=error,
    )


ROWS = [
    row("fast", 0.95, 1.0, 10.0),  # fastest
    row("good", 0.99, 2.0, 10.0),  # most accurate at its latency
    row("slow", 0.99, 3.0, 10.0),  # dominated by good
    row("best", 1.00, 3.0, 50.0),  # most accurate
    row("cheap", 0.95, 1.0, 5.0),  # dominates fast (same, compiles quicker)
    row("broken", 0.0, 0.0, 0.0, error="boom"),
]


def test_front_keeps_the_rows_no_other_beats_on_all_three() -> None:
    assert [r.key for r in pareto.front(ROWS)] == ["cheap", "good", "best"]
    assert pareto.dominates(ROWS[4], ROWS[0])
    assert not pareto.dominates(ROWS[0], ROWS[0])


def test_pick_takes_the_cheapest_row_meeting_the_condition() -> None:
    chosen, why = pareto.pick(ROWS, pareto.parse("agreement>=0.99"))
    assert chosen is not None
    assert chosen.key == "good"
    assert "the cheapest" in why
    assert "3 of 5 configurations meeting agreement>=0.99" in why
    both, _ = pareto.pick(ROWS, pareto.parse("agreement>=0.99, compile<=20"))
    assert both is not None
    assert both.key == "good"
    slowest, _ = pareto.pick(ROWS, pareto.parse("agreement>0.995"))
    assert slowest is not None
    assert slowest.key == "best"


def test_pick_meeting_nothing_says_the_best_achieved() -> None:
    chosen, why = pareto.pick(ROWS, pareto.parse("agreement>1"))
    assert chosen is None
    assert "no configuration meets agreement>1" in why
    assert "the best achieved: best none, agreement 100.00%" in why
    chosen, why = pareto.pick(ROWS[:1], pareto.parse("agreement>=1"))
    assert "best achieved: fast none, agreement 95.00% (95/100)" in why


@pytest.mark.parametrize("text", ["accuracy>=0.9", "agreement=0.9", "agreement>=x", ""])
def test_a_malformed_pick_is_refused(text: str) -> None:
    with pytest.raises(pareto.PickError, match="expected METRIC OP VALUE"):
        pareto.parse(text)


def test_the_plot_is_a_png_of_the_rows() -> None:
    img = Image.open(io.BytesIO(pareto_png(ROWS, "t")))
    assert img.size == (900, 520)
    red = sum(1 for p in np.asarray(img).reshape(-1, 3).tolist() if p == [214, 39, 40])
    assert red > 50  # the front's dots and line
    empty = Image.open(io.BytesIO(pareto_png(ROWS[-1:], "t")))
    assert all(p != [214, 39, 40] for p in np.asarray(empty).reshape(-1, 3).tolist())
