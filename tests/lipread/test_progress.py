"""`lipread`'s progress: the stages of a reading are announced in order, on stderr, so `--json`
on stdout stays one parseable document; MDLA_PROGRESS=0 silences it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lipread.checkpoint import load_checkpoint
from lipread.cli import app, route
from lipread.pipeline import STAGES, read_sentence
from lipread.progress import counted, stages
from lipread.roi import Roi

SAMPLE = (
    Path(__file__).parents[2]
    / "apps/lipread/samples/synthetic_s9001_place_green_at_p_six_please.mp4"
)


def test_read_sentence_announces_every_stage_in_order() -> None:
    seen: list[str] = []
    reading = read_sentence(SAMPLE, load_checkpoint(None), Roi("none"), stage=seen.append)
    assert seen == list(STAGES)
    assert reading.text == "PLACE GREEN AT P SIX PLEASE"


def test_json_stays_clean_and_progress_is_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    result = CliRunner().invoke(app, route([str(SAMPLE), "--json"]))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["text"] == "PLACE GREEN AT P SIX PLEASE"
    assert f"{len(STAGES)}/{len(STAGES)}" in result.stderr


def test_progress_off(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "0")
    with stages(2) as stage:
        stage("a")
    with counted("b", 1) as tick:
        tick()
    assert capsys.readouterr() == ("", "")


def test_counted_reaches_its_total(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    with counted("calibrating on videos", 3) as tick:
        for _ in range(3):
            tick()
    err = capsys.readouterr().err
    assert "calibrating on videos" in err
    assert "3/3" in err
