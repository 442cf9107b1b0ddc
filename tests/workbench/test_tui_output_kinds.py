"""The Run screen, Calibrate and `tune` speak of each output as what it is: a class map gets its
per-pixel agreement with FP32 and its classes (never a top-5 over its flattened pixels), a
detector its boxes, and a dense model's calibration score is its per-pixel agreement, never
"top-1 n/a"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from textual.widgets import Input
from typer.testing import CliRunner

import mdla_compile
from mdla_compile import CompileOptions
from mdla_compile.contract import Contract, contract_from
from tests.workbench.tui_pilot import sync, text, wait_for
from workbench import validation
from workbench.cli import app as cli
from workbench.tui import outputs
from workbench.tui.app import WorkbenchApp
from workbench.tui.run import RunScreen
from workbench.tui.state import tui_options

HERE = Path(__file__).parent
SEG = f"{HERE / 'seg_model.py'}:segmenter"  # 5 classes at the input's size, and an aux head
SSD = f"{HERE / 'ssd_model.py'}:detector"
SIZE = (100, 32)


async def run_once(app: WorkbenchApp, pilot: object) -> RunScreen:
    await wait_for(pilot, lambda: bool(app.session.rows), 120)  # type: ignore[arg-type]
    await pilot.press("5")  # type: ignore[attr-defined]
    screen = app.screen
    assert isinstance(screen, RunScreen)
    screen.query_one("#runs", Input).value = "1"
    await pilot.press("s")  # type: ignore[attr-defined]
    await app.workers.wait_for_complete()
    return screen


def seg_options() -> CompileOptions:
    return tui_options(SEG, contract=Contract(input_shape=(1, 3, 64, 64)))


@sync
async def test_run_shows_a_class_maps_agreement_and_classes() -> None:
    app = WorkbenchApp(SEG, "emu", seg_options())
    async with app.run_test(size=SIZE) as pilot:
        screen = await run_once(app, pilot)
        assert app.session.manifest is not None
        assert outputs.output_kind(app.session.manifest) == validation.CLASS_MAP
        lines = list(screen.predictions.values())
        assert lines
        for line in lines:
            assert re.match(r"pixel agreement \d+\.\d%; classes #\d \d+%", line), line
            assert "0.00" not in line  # no top-5 probabilities over 4,096 pixels


@sync
async def test_run_on_a_mdla_compares_with_its_stored_float_graph(tmp_path: Path) -> None:
    out = tmp_path / "seg.mdla"
    mdla_compile.compile(seg_options()).save(out)
    app = WorkbenchApp(str(out))
    async with app.run_test(size=SIZE) as pilot:
        screen = await run_once(app, pilot)
        assert app.session.compiled is None  # nothing imported: the .mdla and its float graph
        for line in screen.predictions.values():
            assert re.match(r"pixel agreement \d+\.\d%", line), line


def test_a_class_map_without_its_float_graph_says_how_to_get_one() -> None:
    q = np.zeros((1, 3, 4, 4), np.float32)
    q[0, 1, :2] = 1.0  # half the pixels class 1, half class 0
    line = outputs.class_map_line(q, ("sky", "road"), np.zeros((1, 3, 4, 4)), None)
    assert line == (
        "pixel agreement: open the model spec (c) to compare with FP32; classes sky 50%, road 50%"
    )


def test_the_histogram_names_the_largest_classes_first() -> None:
    m = np.array([[0, 1, 1, 1], [2, 2, 3, 4]])
    assert outputs.histogram(m, ("a", "b")) == "b 38%, #2 25%, a 12% (+2 more)"


@sync
async def test_run_shows_a_detectors_boxes() -> None:
    contract = contract_from("1,3,48,48", "minus1to1", crop="none")
    app = WorkbenchApp(SSD, "emu", tui_options(SSD, args=("size=48",), contract=contract))
    async with app.run_test(size=SIZE) as pilot:
        screen = await run_once(app, pilot)
        assert app.session.manifest is not None
        assert outputs.output_kind(app.session.manifest) == outputs.BOXES
        for line in screen.predictions.values():
            assert re.match(r"\d+ box(es)?(: |$)", line), line


@sync
async def test_calibrate_scores_a_class_map_per_pixel() -> None:
    app = WorkbenchApp(SEG, "emu", seg_options())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(app.session.rows), 120)
        await pilot.press("3", "a")
        await wait_for(pilot, lambda: "held-out" in text(app, "#result"), 120)
        result = text(app, "#result")
        assert re.search(r"double: per-pixel argmax agreement \d+\.\d\d%\n", result)
        assert "n/a" not in result
        await pilot.press("a")  # again: the change against the previous setting, in points
        await wait_for(pilot, lambda: "vs percentile" in text(app, "#result"), 120)
        assert "pixel agreement +0.00 pts" in text(app, "#result")  # the same setting


def test_tune_reports_a_class_maps_pixel_agreement() -> None:
    result = CliRunner().invoke(
        cli,
        [
            *("tune", SEG, "--input-shape", "1,3,64,64", "--count", "2", "--held-out", "1"),
            *("--method", "minmax", "--json"),
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    for which in ("new", "previous"):
        assert doc[which]["output_kind"] == validation.CLASS_MAP
        assert 0.5 <= doc[which]["pixel_agreement"] <= 1.0
        assert doc[which]["top1_agreement"] is None
        share = 100 * doc[which]["pixel_agreement"]
        assert f"per-pixel argmax agreement {share:.2f}%" in result.stderr
    assert "n/a" not in result.stderr
