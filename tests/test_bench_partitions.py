"""bench/partitions.py's engine-against-LiteRT table (the table itself is a benchmark, not a
test): on the small ConvNeXt block, its row carries the engine's and LiteRT's CPU times per
inference and their ratios, and its arguments are checked."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

from tests.scripts import load_script

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def partitions() -> ModuleType:
    return load_script("bench_partitions", BENCH / "partitions.py")


def cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def ratio_agrees(ratio: float, a: float, b: float) -> bool:
    """ratio is a / b of the unrounded times, each printed to 0.005 (as the ratio itself)."""
    h = 0.005
    return (a - h) / (b + h) - h <= ratio <= (a + h) / max(b - h, 1e-9) + h


def test_the_second_table_times_the_engine_and_litert(partitions: ModuleType) -> None:
    first, second = partitions.rows("convnext_block", 3)
    assert cells(first)[4] == "yes"  # the engine's bytes are run_int8's
    name, engine, split, xnnpack, litert, r_x, r_l, load = cells(second)
    assert name == "convnext_block"
    npu, cpu = map(float, split.split(" / "))
    assert npu > 0  # both devices ran partitions
    assert cpu > 0
    e, x, lt = float(engine), float(xnnpack), float(litert)
    assert min(e, x, lt) > 0
    assert ratio_agrees(float(r_x), e, x)
    assert ratio_agrees(float(r_l), e, lt)
    assert float(load) >= 0


def test_the_engine_cpu_time_leaves_out_the_set_up(
    partitions: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per inference: the runs + 1 runs' CPU less the 2 runs' (the set-up in both), over
    runs - 1; the engine runs with one thread on each device, and the environment is restored."""
    spent = iter([10.0, 10.5, 20.0, 24.5])  # (before, after) of 2 runs, then of 10 + 1 runs
    seen: list[tuple[int, str | None, str | None]] = []

    class Target:
        def run(self, path: Path, inputs: object, repeat: int, warmup: int) -> None:
            seen.append(
                (repeat, os.environ.get("MDLA_EMU_THREADS"), os.environ.get("MDLA_CPU_THREADS"))
            )

    monkeypatch.setattr(partitions, "children_cpu_s", lambda: next(spent))
    monkeypatch.setattr(partitions.mdla_runtime, "open_target", lambda spec: Target())
    monkeypatch.setenv("MDLA_EMU_THREADS", "2")
    monkeypatch.delenv("MDLA_CPU_THREADS", raising=False)
    ms = partitions.engine_cpu_ms(tmp_path / "m.mdla", None, 10)
    assert ms == pytest.approx((4.5 - 0.5) * 1000 / 9)
    assert seen == [(1, "1", "1"), (10, "1", "1")]
    assert os.environ["MDLA_EMU_THREADS"] == "2"
    assert "MDLA_CPU_THREADS" not in os.environ
    with pytest.raises(ValueError, match="at least 2 runs"):
        partitions.engine_cpu_ms(tmp_path / "m.mdla", None, 1)


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["resnet"], "unknown model 'resnet'"), (["--runs", "1", "convnext_block"], "--runs 1")],
)
def test_bad_arguments_are_usage_errors(
    partitions: ModuleType, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        partitions.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
