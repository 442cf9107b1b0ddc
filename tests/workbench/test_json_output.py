"""`--json` on check, compile, bisect and validate: stdout is exactly one JSON document (text and
progress go to stderr), and its fields are what the command computed, checked against the
libraries' own answers for the same model."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import mdla_legalize
import mdla_runtime
from tests.workbench.conftest import TINY, UNMAPPABLE
from workbench import pipeline
from workbench.cli import app
from workbench.commands.check import conv_macs, op_kind_name
from workbench.output import each, json_output, jsonable, steps


def json_of(result: Any) -> dict[str, Any]:
    """The one JSON document of a --json run: stdout is one line and parses strictly."""
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    doc: dict[str, Any] = json.loads(lines[0], parse_constant=pytest.fail)
    return doc


def test_check_json_is_the_support_report(runner: CliRunner) -> None:
    result = runner.invoke(app, ["check", TINY, "--json"])
    assert result.exit_code == 0, result.output
    doc = json_of(result)
    assert "ops map" in result.stderr  # the table went to stderr
    source = pipeline.load_source(TINY)
    device_graph = pipeline.legalize_graph(source.graph)
    report = mdla_legalize.explain(source.graph, mdla_legalize.load_target("mdla3.5"), "mtk-mdla")
    assert doc["maps"] is True
    assert doc["stage"] == "mapped"
    assert [(o["name"], o["kind"], o["supported"], o["fix"]) for o in doc["ops"]] == [
        (o.name, o.kind, o.supported, o.fix) for o in report.ops
    ]
    assert doc["rules"] == dict(device_graph.provenance.rule_counts)
    assert doc["device_ops"] == len(device_graph.ops)
    assert doc["conv_macs"] == {
        "imported": conv_macs(source.graph),
        "device": conv_macs(device_graph),
    }


def test_check_json_of_an_unmappable_model_exits_3(runner: CliRunner) -> None:
    result = runner.invoke(app, ["check", UNMAPPABLE, "--json"])
    assert result.exit_code == 3, result.output
    doc = json_of(result)
    assert doc["maps"] is False
    assert doc["stage"] == "legalize"
    assert any("GELU" in p for p in doc["problems"])
    assert [o["supported"] for o in doc["ops"]].count(False) >= 1


def test_check_json_of_a_manifest(runner: CliRunner, artifacts: dict[str, Path]) -> None:
    result = runner.invoke(app, ["check", str(artifacts["tiny"]), "--json"])
    assert result.exit_code == 0, result.output
    doc = json_of(result)
    manifest = mdla_runtime.load(artifacts["tiny"])
    flags = mdla_runtime.open_target("emu").supported(manifest, ["mtk-mdla"])["mtk-mdla"]
    assert doc["supported"] == sum(flags) == len(manifest.operations)
    assert [(o["name"], o["kind"]) for o in doc["ops"]] == [
        (op.name, op_kind_name(op.code)) for op in manifest.operations
    ]


def test_compile_json(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "1")  # progress asked for: it must not reach stdout
    out = tmp_path / "t.mdla"
    args = ["compile", TINY, "--calib", "random", "--count", "2", "-o", str(out), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json_of(result)
    manifest = mdla_runtime.load(out)
    assert doc["out"] == str(out)
    assert doc["bytes"] == out.stat().st_size
    assert doc["ops"]["manifest"] == len(manifest.operations)
    assert doc["supported"] == {"ok": len(manifest.operations), "total": len(manifest.operations)}
    assert doc["calibration"]["count"] == 2
    assert doc["calibration"]["method"] == "percentile"
    assert doc["calibration"]["percentile"] == 99.99
    assert doc["worst_layer"]["op"] in {op.name for op in manifest.operations}
    assert "calibrating" in result.stderr  # progress is on stderr, not in the JSON


def test_compile_json_has_no_percentile_for_minmax(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "m.mdla"
    args = ["compile", TINY, "--calib", "random", "--count", "1", "--method", "minmax"]
    result = runner.invoke(app, [*args, "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json_of(result)["calibration"]["percentile"] is None


def test_bisect_json_all_map(runner: CliRunner, artifacts: dict[str, Path]) -> None:
    result = runner.invoke(app, ["bisect", str(artifacts["tiny"]), "--json"])
    assert result.exit_code == 0, result.output
    doc = json_of(result)
    total = len(mdla_runtime.load(artifacts["tiny"]).operations)
    assert doc["maps"] is True
    assert doc["first_unmapped"] is None
    assert doc["ops"] == total
    assert doc["steps"]
    assert all(s["maps"] for s in doc["steps"])
    assert [s["ops"] for s in doc["steps"]] == [
        int(line.split("ops[:")[1].split("]")[0])
        for line in result.stderr.splitlines()
        if "ops[:" in line
    ]


def test_bisect_json_names_the_op(runner: CliRunner) -> None:
    args = ["bisect", TINY, "--skip-rule", "conv_pad_to_pad_valid", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 3, result.output
    doc = json_of(result)
    assert doc["maps"] is False
    found = doc["first_unmapped"]
    assert found["kind"] == "CONV_2D"
    assert found["name"] == "stem.0"
    assert "conv_pad_to_pad_valid" in found["reason"]
    last_failing = [s for s in doc["steps"] if not s["maps"]]
    assert min(s["ops"] for s in last_failing) == found["index"] + 1


def test_validate_json(runner: CliRunner) -> None:
    args = ["validate", TINY, "--calib", "random", "--count", "3", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json_of(result)
    assert doc["kind"] == "logits"
    assert len(doc["inputs"]) == 3
    first = doc["outputs"][0]
    assert first["shape"] == [1, 10]
    same = [i["top1"]["ref"]["index"] == i["top1"]["fp32"]["index"] for i in doc["inputs"]]
    assert first["ref"]["agreement"] == pytest.approx(sum(same) / 3)
    assert first["device"]["agreement"] == pytest.approx(
        sum(i["agree"]["device"] for i in doc["inputs"]) / 3
    )
    assert 0.9 < first["ref"]["cosine"] <= 1.0
    assert len(doc["worst_layers"]) == 5
    sqnrs = [w["sqnr_db"] for w in doc["worst_layers"]]
    assert sqnrs == sorted(sqnrs, key=float)


def test_jsonable_writes_strict_json() -> None:
    doc = jsonable({"a": math.inf, "b": [-math.inf, (1.5, math.nan)], 3: "x"})
    assert doc == {"a": "inf", "b": ["-inf", [1.5, "nan"]], "3": "x"}
    json.dumps(doc, allow_nan=False)


def test_json_output_moves_text_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with json_output(True) as emit:
        print("for people")
        emit({"x": 1})
    assert capsys.readouterr() == ('{"x": 1}\n', "for people\n")
    with json_output(False) as emit:
        print("for people")
        emit({"x": 1})
    assert capsys.readouterr() == ("for people\n", "")


def test_steps_report_on_stderr_or_not_at_all(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    with steps() as s:
        with s.step("importing"):
            pass
        tick = s.bar("calibrating", total=4)
        tick(4)
    out, err = capsys.readouterr()
    assert out == ""
    assert "importing" in err
    assert "4/4" in err
    for asked in ("0", None):  # off; unset and stderr not a terminal (a pipe, CI): off
        if asked is None:
            monkeypatch.delenv("MDLA_PROGRESS")
        else:
            monkeypatch.setenv("MDLA_PROGRESS", asked)
        with steps() as s, s.step("importing"):
            s.bar("calibrating", total=4)(4)
        assert capsys.readouterr() == ("", "")


def test_each_yields_every_item_with_a_bar_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    assert list(each(["a", "b", "c"], "models")) == ["a", "b", "c"]
    out, err = capsys.readouterr()
    assert out == ""
    assert "models c" in err
    assert "3/3" in err
