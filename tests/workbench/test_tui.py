"""The TUI driven by keys with Textual's Pilot: each screen's state and widgets, failing workers
as notifications, q, the bar, help, palette commands, the compile form and its progress, kept
cursor and filter, columns at 80 and 120 wide, and cleanup on exit. Snapshots of every screen:
test_tui_snapshots.py."""

from __future__ import annotations

import io
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console
from textual.binding import Binding
from textual.widgets import DataTable, Input, Log, ProgressBar, Select, Static

import mdla_quant
from mdla_compile import pipeline as compile_pipeline
from tests.workbench.conftest import TINY
from tests.workbench.snapshots import screen_text
from tests.workbench.tui_pilot import compiled_tiny, installed, settle, sync, text, tiny, wait_for
from workbench import held_out, pipeline, tuning
from workbench.commands import tui as tui_command
from workbench.tui import chart, graph
from workbench.tui.app import SCREEN_CLASSES, WorkbenchApp
from workbench.tui.calibrate import CalibrateScreen
from workbench.tui.chrome import SCREENS, ScreenBar
from workbench.tui.forms import CompileForm, PathPrompt, parse_options
from workbench.tui.help import HelpScreen
from workbench.tui.run import RunScreen
from workbench.tui.spark import Spark
from workbench.tui.state import tui_options

SIZE = (100, 32)
SIZES = [(80, 24), (120, 40)]
__all__ = ["tiny"]  # the module-scoped fixture, shared with the snapshot tests


def opened(spec: str = TINY, **kw: list[str]) -> WorkbenchApp:
    app = WorkbenchApp(None)
    app.session.open(spec, **kw)  # what the Graph screen's worker does, done up front
    return app


@sync
async def test_graph_opens_searches_and_details() -> None:
    app = WorkbenchApp(TINY)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one("#ops", DataTable)
        await wait_for(pilot, lambda: table.row_count == 8)
        assert "8/8 ops on mtk-mdla" in text(app, "#summary")
        await pilot.press("down", "down")
        assert "#2 stem.2.logistic (LOGISTIC)" in text(app, "#detail")
        assert "scale 0.00390625, zero point -128" in text(app, "#detail")  # fixed 1/256
        await pilot.press("slash", *"conv")
        assert table.row_count == 3  # CONV_2D ×2 and the DEPTHWISE_CONV_2D
        await pilot.press("enter")
        assert isinstance(app.focused, DataTable)


@sync
async def test_bisect_selects_the_failing_op_in_graph() -> None:
    app = opened(skip_rules=["conv_pad_to_pad_valid"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        assert app.current_mode == "bisect"
        await pilot.press("s")
        await wait_for(pilot, lambda: app.current_mode == "graph")
        assert app.session.selected == 0
        table = app.screen.query_one("#ops", DataTable)
        assert table.cursor_row == 0
        assert "fix: rule conv_pad_to_pad_valid" in text(app, "#detail")
        await pilot.press("2")
        log = "\n".join(app.screen.query_one(Log).lines)
        assert "ops[:7]: 0/7 supported -> does not map" in log
        assert "first unmappable op: #0 stem.0 (CONV_2D)" in log


@sync
async def test_bisect_is_still_when_idle_and_forgets_an_old_model(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        bar = app.screen.query_one(ProgressBar)
        assert (bar.total, bar.percentage) == (1, 0)  # a total: no indeterminate animation
        await pilot.press("s")
        await wait_for(pilot, lambda: "all 8 ops map on mtk-mdla" in text(app, "#status"))
        assert bar.percentage == 1
        await pilot.press("1", "2")
        assert "all 8 ops map" in text(app, "#status")  # the same model: the result stays
        app.session.install(tiny)  # another manifest (what Calibrate's re-quantize does)
        await pilot.press("1", "2")
        assert "press s to bisect" in text(app, "#status")
        assert not app.screen.query_one(Log).lines
        assert (bar.total, bar.percentage) == (1, 0)


@sync
async def test_calibrate_requantizes_shows_delta_and_saves(
    tmp_path: Path, tiny: pipeline.Compiled
) -> None:
    app = installed(tiny)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "a")
        await wait_for(pilot, lambda: "held-out" in text(app, "#result"))
        first = text(app, "#result")
        assert "calibrated on 4, scored on 2 held-out inputs the quantizer never saw" in first
        assert "percentile 99.99 double: top-1 agreement" in first
        assert "vs " not in first  # nothing to compare with yet
        assert app.session.sqnr
        assert all(v > 20 for v in app.session.sqnr.values())
        assert app.session.rows[0].sqnr_db is not None  # the Graph view gets the SQNR column
        app.screen.query_one("#method", Select).value = "minmax"
        await pilot.pause()
        assert not app.screen.query_one("#percentile", Input).display  # minmax has none
        await pilot.press("a")
        await wait_for(pilot, lambda: "vs percentile 99.99 double:" in text(app, "#result"))
        second = text(app, "#result")
        assert "minmax double: top-1 agreement" in second
        assert "99.99" not in second.split("vs ")[0]  # no percentile for a method without one
        out = tmp_path / "kept.mdla"
        app.screen.query_one("#save", Input).value = str(out)
        await pilot.press("k")
        assert out.read_bytes()[:5] == b"\x89MDLA"
        doc = json.loads(out.with_suffix(".tuning.json").read_text())
        assert (doc["calibration"]["count"], doc["held_out"]["count"]) == (4, 2)
        assert (doc["new"]["setting"], doc["previous"]["setting"]) == (
            "minmax double",
            "percentile 99.99 double",
        )
        assert out.with_suffix(".sqnr.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert app.session.manifest is not None
        assert app.session.manifest.provenance.quant is not None
        assert app.session.manifest.provenance.quant.method == "minmax"


@sync
async def test_calibrate_scores_on_held_out_inputs_only(tiny: pipeline.Compiled) -> None:
    """The quantizer sees the first `calib` inputs; the shown scores are those of the next
    `held-out` ones, recomputed here from an independent split of the same source."""
    app = installed(tiny)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        app.screen.query_one("#count", Input).value = "3"
        app.screen.query_one("#held-out", Input).value = "4"
        await pilot.press("a")
        await wait_for(pilot, lambda: "held-out" in text(app, "#result"))
        assert "calibrated on 3, scored on 4 held-out inputs" in text(app, "#result")
        screen = app.screen
        assert isinstance(screen, CalibrateScreen)
        assert screen.comparison is not None
        new = screen.comparison.new
        assert len(new.compiled.calibration) == 3
        split = tuning.split_calibration("random", tiny.source, 3, 4)
        report = mdla_quant.compare(
            tiny.device_graph, new.compiled.qgraph, [xs for _, xs in split.held_out]
        )
        assert [(t.name, t.sqnr_db, t.cosine, t.max_abs) for t in report.tensors] == [
            (t.tensor, t.sqnr_db, t.cosine, t.max_abs) for t in new.layers
        ]
        assert new.agreement is not None
        assert new.agreement.n == 4
        low, high = held_out.wilson(new.agreement.same, 4)
        assert f"(95% CI {low * 100:.0f}–{high:.0%})" in text(app, "#result")
        await pilot.press("a")  # the same split again: a delta against the first run
        await wait_for(pilot, lambda: "vs percentile" in text(app, "#result"))
        app.screen.query_one("#held-out", Input).value = "3"
        await pilot.press("a")  # another split: no delta against scores of other inputs
        await wait_for(pilot, lambda: "scored on 3 held-out" in text(app, "#result"))
        assert "vs " not in text(app, "#result")
        app.screen.query_one("#held-out", Input).value = "0"
        await pilot.press("a")
        await pilot.pause()
        assert any("at least 1 input each" in n.message for n in app._notifications)


@sync
async def test_calibrate_chart_deltas_against_the_previous_setting(
    tiny: pipeline.Compiled,
) -> None:
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3", "a")
        await wait_for(pilot, lambda: "held-out" in text(app, "#result"))
        first = chart_text(app)
        assert "Δ dB" in first
        assert " - " in first  # no previous setting: no deltas yet
        app.screen.query_one("#method", Select).value = "mse"
        await pilot.press("a")
        await wait_for(pilot, lambda: "vs percentile" in text(app, "#result"))
        screen = app.screen
        assert isinstance(screen, CalibrateScreen)
        c = screen.comparison
        assert c is not None
        assert c.previous is not None
        old = {t.tensor: t for t in c.previous.layers}
        lines = {line.split()[0]: line for line in chart_text(app).splitlines()[1:]}
        for t in c.new.layers:  # rows named by op, as the Graph screen names them
            p = old[t.tensor]
            row = lines[t.op].split()
            assert row[1:8] == [
                f"{t.cosine:.4f}",
                chart.signed(t.cosine - p.cosine, "{:+.1e}"),
                f"{t.sqnr_db:.1f}",
                chart.signed(t.sqnr_db - p.sqnr_db, "{:+.1f}"),
                f"{t.max_abs:.3g}",
                chart.signed(t.max_abs - p.max_abs, "{:+.1e}"),
                "█" * round(min(t.sqnr_db, chart.BAR_DB) / chart.BAR_DB * 20),
            ]
            prev_bar = "█" * round(min(p.sqnr_db, chart.BAR_DB) / chart.BAR_DB * 20)
            assert row[8:] == [prev_bar, t.tensor]  # at 120 columns the tensor fits too


def test_calibrate_chart_fits_80_and_120_cutting_names_not_numbers() -> None:
    c = tuning.compare(fake_trial("fc", -3.0), fake_trial("fc", 12.5))
    long = tuning.compare(fake_trial("a_very_long_layer_name_indeed_" * 2, 31.25), None)
    for width in (78, 118):
        for comparison in (c, long):
            out = io.StringIO()
            Console(file=out, width=width, color_system=None).print(chart.chart(comparison, width))
            lines = out.getvalue().splitlines()
            assert max(len(line) for line in lines) <= width
            assert ("0.5000" if comparison is c else "0.6000") in lines[1]
            # a long op name keeps its end, where sibling layers differ
            first = lines[1].split()[0]
            assert first == "fc" if comparison is c else first.startswith("…")
            assert first.endswith("layer_name_indeed_" if comparison is long else "fc")
    out = io.StringIO()
    Console(file=out, width=118, color_system=None).print(chart.chart(c, 118))
    assert out.getvalue().splitlines()[1].split()[1:] == [
        "0.5000",
        "-1.0e-01",
        "-3.0",
        "-15.5",
        "0.25",
        "+5.0e-02",
        "█" * 4,
        "fc.out",  # the tensor, secondary, where there is room
    ]  # a negative SQNR draws no bar; the previous 12.5 dB draws round(12.5 / 60 * 20)


def chart_text(app: WorkbenchApp) -> str:
    """The chart's lines as shown: from its header row to the first blank line."""
    lines = [line.strip() for line in screen_text(app).splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("layer "))
    end = lines.index("", start)
    return "\n".join(lines[start:end])


def fake_trial(op: str, db: float) -> tuning.Trial:
    cosine = 0.5 if db < 0 else 0.6
    max_abs = 0.25 if db < 0 else 0.2
    layer = tuning.Layer(f"{op}.out", op, "conv", cosine, db, max_abs)
    config = mdla_quant.QuantConfig()
    return tuning.Trial("x", config, compiled_tiny(), (layer,), None, 1.0, 1, ("h",))


@sync
async def test_witness_protocol_on_the_emulator_counter(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        app.screen.query_one("#idle", Input).value = "0.2"
        app.screen.query_one("#runs", Input).value = "300"
        await pilot.press("s")
        await wait_for(pilot, lambda: "verdict:" in text(app, "#verdict"))
        verdict = text(app, "#verdict")
        assert "verdict: witnessed" in verdict
        assert "the emulator's fake runtime-PM node" in verdict
        await wait_for(pilot, lambda: max(app.screen.query_one(Spark).data or [0]) > 0, 5)


@sync
async def test_run_latency_and_predictions(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        app.screen.query_one("#runs", Input).value = "4"
        await pilot.press("s")
        await wait_for(pilot, lambda: "4 run(s) on mtk-mdla" in text(app, "#latency"))
        assert len(app.screen.query_one(Spark).data or []) == 4
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_for(pilot, lambda: "random" in screen.predictions)
        assert screen.predictions["random"].count(",") == 4  # five classes


@sync
async def test_a_failing_worker_is_a_notification() -> None:
    app = WorkbenchApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o", *"no_such_net", "enter")
        await wait_for(pilot, lambda: bool(app._notifications))  # Textual's toast list
        (note,) = list(app._notifications)
        assert note.severity == "error"
        assert "unknown model `no_such_net`" in note.message
        assert app.is_running
        await pilot.press("2", "s")  # nothing open: a warning, not a crash
        assert app.current_mode == "bisect"
        assert app.is_running


@sync
async def test_q_types_in_fields_and_quits_elsewhere() -> None:
    app = WorkbenchApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o", *"sq")
        assert app.screen.query_one("#open", Input).value == "sq"
        await pilot.press("escape", "3", "q")
        await pilot.pause()
        assert not app.is_running


def keys_shown(app: WorkbenchApp) -> str:
    """The footer: the screen's last line."""
    return screen_text(app).rstrip("\n").splitlines()[-1]


@pytest.mark.parametrize("size", SIZES)
@sync
async def test_every_screen_has_the_bar_and_its_keys(size: tuple[int, int]) -> None:
    app = WorkbenchApp(None)
    async with app.run_test(size=size) as pilot:
        for key, (mode, title) in enumerate(SCREENS, 1):
            await pilot.press(str(key))
            assert app.current_mode == mode
            await pilot.pause()
            first, second = screen_text(app).splitlines()[:2]
            assert "target mdla3.5" in first
            assert "device mtk-mdla" in first
            assert "on emu" in first
            assert "model (none" in first
            assert f" {key} {title} " in second
            assert "? help" in second
            shown = app.screen.query_one("#bar", ScreenBar).shown
            (current,) = [s for s in shown.spans if "reverse" in str(s.style)]
            assert shown.plain[current.start : current.end].strip() == f"{key} {title}"
            footer = keys_shown(app)
            for shown in ("q Quit", "? Help", "c Compile", "^p"):
                assert shown in footer, (mode, size, footer)


@sync
async def test_help_lists_every_binding(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.pause()
        console = Console(width=100, file=io.StringIO(), record=True)
        console.print(app.screen.table)
        shown = console.export_text()
        lines = [ln.strip() for ln in shown.splitlines()]
        for cls in (WorkbenchApp, *SCREEN_CLASSES):
            for binding in Binding.make_bindings(cls.BINDINGS):  # type: ignore[attr-defined]
                keys = app.get_key_display(binding)
                row = [ln for ln in lines if ln.split("  ")[0].strip().split(", ").count(keys)]
                assert any(binding.description in ln for ln in row), (cls, binding.key, shown)
        for _, title in SCREENS:
            assert title in lines
        assert "^p" in shown
        await pilot.press("escape")
        assert app.current_mode == "calibrate"
        assert not isinstance(app.screen, HelpScreen)


@sync
async def test_palette_commands_switch_device_save_and_export(
    tmp_path: Path, tiny: pipeline.Compiled
) -> None:
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+p", *"export")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PathPrompt), 5)
        out = tmp_path / "net.tflite"
        await pilot.press(*str(out), "enter")
        await wait_for(pilot, out.exists, 20)
        assert out.read_bytes()[4:8] == b"TFL3"
        await pilot.press("ctrl+p", *"save")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PathPrompt), 5)
        await pilot.press(*str(tmp_path / "bad.txt"), "enter")
        await wait_for(
            pilot, lambda: any("must end in .mdla" in n.message for n in app._notifications), 10
        )
        await pilot.press("ctrl+p", *"mtk-gpu")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.session.device == "mtk-gpu", 5)
        await wait_for(pilot, lambda: "ops on mtk-gpu" in app.session.note, 60)
        compiled = app.session.compiled
        assert compiled is not None
        assert compiled.config.device == "mtk-gpu"
        await pilot.pause(0.2)
        assert "device mtk-gpu" in screen_text(app).splitlines()[0]


@sync
async def test_compile_form_progress_and_a_responsive_ui(monkeypatch: pytest.MonkeyPatch) -> None:
    """The form's values reach the pipeline; while it is held at calibration the loading row
    shows its stage and bar, and the keys still switch screens; then the result shows."""
    gate = threading.Event()
    real = compile_pipeline.calibration_inputs

    def held(*args: Any, **kwargs: Any) -> Any:
        assert gate.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(compile_pipeline, "calibration_inputs", held)
    app = WorkbenchApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("c")
        assert isinstance(app.screen, CompileForm)
        form = app.screen
        form.query_one("#f-spec", Input).value = TINY
        form.query_one("#f-method", Select).value = "minmax"
        await pilot.pause()
        assert form.query_one("#f-percentile", Input).disabled  # minmax has no percentile
        form.query_one("#f-bias", Select).value = "yes"
        form.query_one("#f-cpu", Input).value = "LOGISTIC"
        form.query_one("#f-count", Input).value = "3"
        form.query_one("#f-skip", Input).value = "no_such_rule"
        await pilot.press("ctrl+s")
        assert "unknown rule no_such_rule" in str(form.query_one("#form-error", Static).render())
        form.query_one("#f-skip", Input).value = ""
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.current_mode == "graph" and app.screen is not form, 5)
        await wait_for(pilot, lambda: "legalizing" in text(app, "#stage"), 30)
        assert app.screen.query_one("#loading").display
        bar = app.screen.query_one("#compile-progress", ProgressBar)
        assert (bar.total, bar.progress) == (7, 1)  # import, legalize, 3 inputs, write, ask
        first, second = screen_text(app).splitlines()[:2]
        assert "compiling: legalizing" in first
        assert second.startswith(" 1 Graph ")  # the busy bar is cut, never wrapped
        await pilot.press("2")
        assert app.current_mode == "bisect"  # the UI answers while the worker is held
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "1")
        gate.set()
        await wait_for(pilot, lambda: not app.screen.query_one("#loading").display, 60)
        compiled = app.session.compiled
        assert compiled is not None
        config = compiled.config
        assert (config.method, config.bias_correction, len(compiled.calibration)) == (
            "minmax",
            True,
            3,
        )
        assert compiled.device_graph.provenance.cpu_ops == ("stem.2.logistic",)
        assert "7/7 ops on mtk-mdla (emu), 1 on cpu" in text(app, "#summary")
        assert "cpu" in [r[4] for r in map(graph.cells, app.session.rows)]
        assert any("LOGISTIC" in n.message for n in app._notifications)  # placed though it maps


FORM = {
    "spec": TINY,
    "weights": "",
    "shape": "",
    "preset": "",
    "mean": "",
    "std": "",
    "labels": "",
    "args": "",
    "import": "fx",
    "target": "x.toml",
    "device": "mtk-dsp",
    "skip": "",
    "cpu": "X, f.* Y",
    "method": "mse",
    "percentile": "",
    "bias": "no",
    "calib": "",
    "count": "2",
}


def test_parse_options_names_the_bad_field() -> None:
    rule = pipeline.rule_names()[0]
    ok = parse_options(FORM | {"skip": rule}, tui_options())
    assert ok == tui_options(
        TINY,
        target="x.toml",
        device="mtk-dsp",
        skip_rules=(rule,),
        cpu=("X", "f.*", "Y"),
        quant=mdla_quant.QuantConfig("mse", target="x.toml"),
        import_path="fx",  # the form's, not the default (auto)
    )
    bad = {
        "skip rules: unknown rule nope": {"skip": "nope"},
        "percentile: `x`": {"percentile": "x"},
        "percentile: 101": {"percentile": "101"},
        "count: 0": {"count": "0"},
        "--input-shape `1,3,x`": {"shape": "1,3,x"},
        "--preset `nope`": {"preset": "nope"},
        "--mean and --std go together": {"mean": "0.5"},
        "weights: `nope.pt` does not exist": {"weights": "nope.pt"},
        "model: type": {"spec": " "},
    }
    for message, fields in bad.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            parse_options(FORM | fields, tui_options())


@sync
async def test_cursor_and_filter_survive_screen_switches(tiny: pipeline.Compiled) -> None:
    app = installed(tiny)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one("#ops", DataTable)
        await pilot.press("down", "down", "down")
        assert (table.cursor_row, app.session.selected) == (3, 3)
        await pilot.press("2", "1")
        table = app.screen.query_one("#ops", DataTable)
        assert table.cursor_row == 3
        assert text(app, "#detail").startswith("#3 stem.2 (MUL)")
        await pilot.press("slash", *"conv", "enter")
        assert table.row_count == 3
        await pilot.press("down")
        selected = app.session.selected
        await pilot.press("5", "1")
        assert app.screen.query_one("#search", Input).value == "conv"
        assert table.row_count == 3
        assert app.session.selected == selected
        assert text(app, "#detail").startswith(f"#{selected} ")


def test_fit_cuts_names_never_numbers() -> None:
    row = ("12", "features.very_long_block_name.conv", "DEPTHWISE_CONV_2D+RELU6", "1×112×112×32")
    rows = [(*row, "yes", "0.000948/-128", "41.3")]
    for width in (50, 60, 100):
        widths = graph.fit(rows, width)
        for i in (0, 3, 4, 5, 6):
            assert widths[i] >= len(rows[0][i]), (width, i)
        assert sum(widths) + graph.PAD * len(widths) + graph.SCROLLBAR <= max(width, 64)
    wide = graph.fit(rows, 200)
    assert wide[1:3] == [len(row[1]), len(row[2])]
    assert graph.cut("stem.2.logistic", 6) == "stem.…"


@pytest.mark.parametrize("size", SIZES)
@sync
async def test_columns_fit_and_numbers_are_whole(
    size: tuple[int, int], tiny: pipeline.Compiled
) -> None:
    app = installed(tiny)
    app.session.sqnr = {r.name: 30.0 + r.index for r in app.session.rows}
    app.session.install(tiny)  # the SQNR column filled, as after Calibrate
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        shown = screen_text(app)
        assert all(len(line) <= size[0] for line in shown.splitlines())
        for row in app.session.rows:
            cells = graph.cells(row)
            line = next(ln for ln in shown.splitlines() if ln.startswith(f" {row.index}  "))
            for i in (0, 3, 5, 6):  # index, shape, scale/zp and SQNR: never cut
                assert f" {cells[i]} " in f"{line} ", (size, cells[i], line)
            assert row.name in line or "…" in line


@sync
async def test_quit_removes_the_temp_dir_and_closes_the_target(tiny: pipeline.Compiled) -> None:
    closed: list[bool] = []

    class Remote:  # stands in for an SshTarget: only close() is called at exit
        def close(self) -> None:
            closed.append(True)

    for key in ("q", "ctrl+c"):
        app = installed(tiny)
        workdir = app.session.workdir
        assert (workdir / "current.mdla").is_file()
        async with app.run_test(size=(80, 24)) as pilot:
            app.session._target = Remote()  # type: ignore[assignment]
            await pilot.press(key)
            await pilot.pause()
        assert not app.is_running
        assert not workdir.exists(), key
    assert closed == [True, True]


def test_sigint_in_the_tui_command_still_cleans_up(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Path] = []

    def interrupted(self: WorkbenchApp) -> None:
        made.append(self.session.workdir)
        raise KeyboardInterrupt

    monkeypatch.setattr(WorkbenchApp, "run", interrupted)
    with pytest.raises(typer.Exit) as caught:
        tui_command.open_tui(None)
    assert caught.value.exit_code == 130  # INTERRUPTED
    (workdir,) = made
    assert not workdir.exists()
