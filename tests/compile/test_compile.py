"""`mdla_compile.compile`: the stages in order as events, the graphs at each stage, the same
int8 graph as the stages called one by one, saving, the report, the .tflite, option errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import mdla_compile
import mdla_ir
import mdla_runtime
from mdla_compile import (
    CalibrationTick,
    CompileError,
    CompileOptions,
    Event,
    Imported,
    OptionError,
    Placed,
    Stage,
    StageFinished,
    StageStarted,
)
from mdla_quant import QuantConfig
from tests.workbench.conftest import TINY, TINY_IMAGES


@pytest.fixture(scope="module")
def tiny() -> tuple[mdla_compile.Compiled, list[Event]]:
    events: list[Event] = []
    options = CompileOptions(TINY, calib="random", count=2)
    return mdla_compile.compile(options, on_event=events.append), events


def test_events_come_stage_by_stage(tiny: tuple[mdla_compile.Compiled, list[Event]]) -> None:
    _, events = tiny
    shape = [
        (type(e).__name__, getattr(e, "stage", None))
        for e in events
        if not isinstance(e, CalibrationTick)
    ]
    assert shape == [
        ("StageStarted", Stage.IMPORT),
        ("StageFinished", Stage.IMPORT),
        ("Imported", None),
        ("StageStarted", Stage.LEGALIZE),
        ("StageFinished", Stage.LEGALIZE),
        ("StageStarted", Stage.QUANTIZE),
        ("StageFinished", Stage.QUANTIZE),
    ]
    assert events[0] == StageStarted(Stage.IMPORT, TINY)
    assert StageStarted(Stage.QUANTIZE, "random", 2) in events
    ticks = [e for e in events if isinstance(e, CalibrationTick)]
    assert ticks
    assert ticks[-1] == CalibrationTick(2, 2)
    finished = [e for e in events if isinstance(e, StageFinished)]
    assert all(e.seconds >= 0 for e in finished)


def test_the_graph_at_each_stage(tiny: tuple[mdla_compile.Compiled, list[Event]]) -> None:
    compiled, events = tiny
    (imported,) = [e for e in events if isinstance(e, Imported)]
    assert compiled.float_graph is imported.source.graph is compiled.source.graph
    assert len(compiled.float_graph.ops) == 6
    assert compiled.device_graph.provenance.target == "mdla3.5"
    assert compiled.qgraph.provenance.quant is not None
    assert compiled.qgraph.provenance.spec == TINY
    assert set(compiled.seconds) == {"import", "legalize", "quantize"}
    assert compiled.options == CompileOptions(TINY, calib="random", count=2)


def test_compile_is_the_stages_one_by_one(
    tiny: tuple[mdla_compile.Compiled, list[Event]],
) -> None:
    compiled, _ = tiny
    source = mdla_compile.load_source(TINY)
    device = mdla_compile.legalize_graph(source.graph)
    calib = mdla_compile.calibration_inputs("random", source, 2)
    by_hand = mdla_compile.quantize_graph(source, device, calib, QuantConfig())
    assert mdla_runtime.to_bytes(by_hand.qgraph) == mdla_runtime.to_bytes(compiled.qgraph)


def test_requantize_reuses_the_graphs_and_calibration(
    tiny: tuple[mdla_compile.Compiled, list[Event]],
) -> None:
    compiled, _ = tiny
    minmax = QuantConfig(method="minmax")
    again = compiled.requantize(minmax)
    assert again.source is compiled.source
    assert again.device_graph is compiled.device_graph
    assert again.calibration is compiled.calibration
    assert again.config == minmax
    assert again.options is not None
    assert again.options.quant == minmax
    assert again.seconds["quantize"] >= 0
    by_hand = mdla_compile.quantize_graph(
        compiled.source, compiled.device_graph, compiled.calibration, minmax
    )
    assert mdla_runtime.to_bytes(again.qgraph) == mdla_runtime.to_bytes(by_hand.qgraph)
    assert mdla_runtime.to_bytes(again.qgraph) != mdla_runtime.to_bytes(compiled.qgraph)


def test_save_report_and_tflite(
    tiny: tuple[mdla_compile.Compiled, list[Event]], tmp_path: Path
) -> None:
    compiled, _ = tiny
    with pytest.raises(CompileError, match="save it first"):
        mdla_compile.compile(CompileOptions(TINY, calib="random", count=1)).report()
    manifest = compiled.save(tmp_path / "t.mdla", tflite=tmp_path / "t.tflite")
    assert (tmp_path / "t.mdla").read_bytes()[:5] == b"\x89MDLA"
    assert (tmp_path / "t.tflite").read_bytes()[4:8] == b"TFL3"
    ok, total = mdla_compile.support_count(mdla_runtime.open_target("emu"), manifest)
    report = compiled.report("emu", (ok, total))
    rows = dict(report.rows())
    assert rows["ops"] == f"6 imported -> {len(manifest.operations)}"
    assert rows["ops on mtk-mdla"] == f"{ok}/{total} (emu)"
    assert rows["calibration"] == "2 x random, percentile, double"
    assert rows["size"].endswith(f"KiB  {tmp_path / 't.mdla'}")
    assert "cosine vs FP32" not in rows
    doc = report.as_dict()
    assert doc["supported"] == {"ok": ok, "total": total}
    assert doc["bytes"] == (tmp_path / "t.mdla").stat().st_size
    compiled.export_tflite(tmp_path / "again.tflite")
    assert (tmp_path / "again.tflite").read_bytes() == (tmp_path / "t.tflite").read_bytes()
    with pytest.raises(OptionError, match=r"must end in \.tflite"):
        compiled.export_tflite(tmp_path / "x.mdla")


def test_cpu_placement_is_an_event_and_a_report_row(tmp_path: Path) -> None:
    events: list[Event] = []
    options = CompileOptions(TINY, calib="random", count=1, cpu=("LOGISTIC",))
    compiled = mdla_compile.compile(options, on_event=events.append)
    (placed,) = [e for e in events if isinstance(e, Placed)]
    assert placed.placement.graph.provenance.cpu_ops
    assert compiled.device_graph is placed.placement.graph
    manifest = compiled.save(tmp_path / "p.mdla")
    ok, total = mdla_compile.support_count(mdla_runtime.open_target("emu"), manifest)
    rows = dict(compiled.report("emu", (ok, total)).rows())
    assert (
        rows["ops on mtk-mdla"] == f"{ok}/{total} (emu), {len(manifest.operations) - total} on cpu"
    )
    assert 0.9 < float(rows["cosine vs FP32"]) <= 1.0


def test_auto_calibration_follows_the_model() -> None:
    assert (
        mdla_compile.compile(CompileOptions(TINY, calib="auto", count=1)).calibration[0][0].min()
        < 0
    )
    photos = mdla_compile.compile(CompileOptions(TINY_IMAGES, calib="auto", count=1))
    samples = mdla_compile.calibration_inputs("samples", photos.source, 1)
    assert (photos.calibration[0][0] == samples[0][0]).all()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (lambda: CompileOptions(TINY, count=0), "--count must be at least 1"),
        (lambda: CompileOptions("lite0.mdla"), "is a compiled manifest"),
        (lambda: CompileOptions(TINY, calib="random", cpu=("NO_SUCH_OP",)), "NO_SUCH_OP"),
        (lambda: CompileOptions(TINY, skip_rules=("no_such_rule",)), "no_such_rule"),
        (lambda: CompileOptions(TINY, args=("width",)), "width"),
    ],
)
def test_a_bad_option_is_an_option_error(options: object, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        mdla_compile.compile(options())  # type: ignore[operator]


def test_calibrating_photos_needs_preprocessing() -> None:
    with pytest.raises(CompileError, match="records no image preprocessing") as err:
        mdla_compile.compile(CompileOptions(TINY, calib="samples", count=1))
    assert not isinstance(err.value, OptionError)


def test_save_stores_the_float_graph_beside_the_mdla_unless_told_not(
    tiny: tuple[mdla_compile.Compiled, list[Event]], tmp_path: Path
) -> None:
    compiled, _ = tiny
    kept = compiled.save(tmp_path / "kept.mdla")
    assert kept.path is not None
    graph, bound_to = mdla_ir.stored.loads(mdla_ir.stored.sidecar(kept.path).read_bytes())
    assert bound_to == hashlib.sha256((tmp_path / "kept.mdla").read_bytes()).hexdigest()
    assert graph.ops == tuple(op.with_(source=None) for op in compiled.float_graph.ops)
    compiled.save(tmp_path / "bare.mdla", store_float=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "bare.mdla",
        "kept.mdla",
        "kept.mdla.fp32",
    ]


def test_save_writes_the_float_graph_as_it_is_made_and_puts_it_in_place_last(
    tiny: tuple[mdla_compile.Compiled, list[Event]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The .mdla.fp32 is `stored.dumps`' bytes, written straight into its temporary file
    (never first gathered in memory: `dumps` is not called); a save stopped before its files
    are replaced (an interrupt) leaves no file and no temporary one."""
    compiled, _ = tiny

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        compiled.save(tmp_path / "m.mdla", before_write=interrupted)
    assert list(tmp_path.iterdir()) == []
    want = mdla_ir.stored.dumps
    monkeypatch.setattr(mdla_ir.stored, "dumps", lambda *_a: pytest.fail("a copy in memory"))
    compiled.save(tmp_path / "m.mdla")
    mdla = (tmp_path / "m.mdla").read_bytes()
    fp32 = (tmp_path / "m.mdla.fp32").read_bytes()
    assert fp32 == want(compiled.float_graph, hashlib.sha256(mdla).hexdigest())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mdla", "m.mdla.fp32"]


def test_save_checks_its_file_without_the_python_decoder(
    tiny: tuple[mdla_compile.Compiled, list[Event]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saved file is checked by the C reader (`mdla_runtime.written`): the pure-Python
    decoder, 0.1-0.5 s on a classifier's header, is not run, and the Manifest is the file's."""
    from mdla_runtime.format import c_reader
    from mdla_runtime.format import manifest as mf

    if c_reader.library() is None:
        pytest.skip("no C compiler")
    decoded: list[bytes] = []
    real = mf.validate
    monkeypatch.setattr(mf, "validate", lambda b, budget: decoded.append(b) or real(b, budget))
    compiled, _ = tiny
    manifest = compiled.save(tmp_path / "c.mdla")
    assert decoded == []
    loaded = mdla_runtime.load(tmp_path / "c.mdla")
    assert (manifest.model, manifest.operations) == (loaded.model, loaded.operations)
