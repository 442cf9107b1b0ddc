"""Progress of `--roi auto` (issue 21): the face tracker reports every keyframe detection and
every O-Net call on stderr, with totals (so rich shows an ETA), joined to `lipread VIDEO`'s stage
bar; `--json` on stdout stays one document. Cutting a round into ONET_BATCH calls is the cut
`npu_nets` made anyway: the corners are the same bit for bit."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import lipread.mtcnn_npu as mtcnn_npu
from lipread.cli import app
from lipread.mtcnn_npu import CascadeDetector, compile_mtcnn, npu_nets, track_batched
from lipread.progress import phases, stages
from lipread.video import write_video
from tests.lipread.test_mtcnn import SIZE, face_frames


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The compiled nets, shared with test_mtcnn.py's fixture when both run in one session."""
    path = tmp_path_factory.getbasetemp() / "lipread-cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LIPREAD_CACHE", str(path))
        compile_mtcnn(SIZE)
        yield path


@pytest.fixture(scope="module")
def npu(cache: Path) -> CascadeDetector:
    os.environ["LIPREAD_CACHE"] = str(cache)
    return CascadeDetector(npu_nets(SIZE, "emu"), SIZE)


def test_every_detection_and_onet_call_is_reported(
    npu: CascadeDetector, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = face_frames(40)
    whole = track_batched(frames, npu)
    monkeypatch.setattr(mtcnn_npu, "ONET_BATCH", 16)
    seen: list[tuple[str, int, int]] = []
    cut = track_batched(frames, npu, report=lambda *r: seen.append(r))
    np.testing.assert_array_equal(cut, whole)  # per-sample int8 nets: the cut changes nothing
    keyframes = [r for r in seen if r[0] == "detecting keyframes"]
    assert keyframes == [("detecting keyframes", k, 3) for k in (1, 2, 3)]  # frames 0, 25, 39
    first = [r for r in seen if r[0] == "tracking frames"]
    assert first == [("tracking frames", n, 37) for n in (16, 32, 37)]
    last = [r for r in seen if r[0] == "re-centring frames"]
    assert last[-1][1] == last[-1][2] > 0
    assert any(r[0].startswith("recovering lost frames, round 2") for r in seen)  # the swing
    for phase in {r[0] for r in seen}:  # each phase (each round its own) counts up to its total
        marks = [(d, t) for p, d, t in seen if p == phase]
        assert [d for d, _ in marks] == sorted(d for d, _ in marks)
        assert all(0 < d <= t for d, t in marks)


def test_a_bar_opened_inside_stages_joins_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """rich allows one live display: the tracker's bar inside the stage bar must not raise
    LiveError, and both lines reach stderr."""
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    with stages(2) as stage:
        stage("cropping the mouth")
        with phases("tracking the face") as report:
            report("detecting keyframes", 1, 2)
            report("tracking frames", 48, 48)
        stage("running")
    out, err = capsys.readouterr()
    assert out == ""
    assert "tracking the face: done" in err
    assert "48/48" in err
    assert "2/2" in err


def test_roi_auto_progress_is_on_stderr_and_json_stays_clean(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIPREAD_CACHE", str(cache))
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    video = tmp_path / "face.mp4"
    write_video(video, face_frames(30))
    result = CliRunner().invoke(app, ["read", str(video), "--roi", "auto", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["roi"] == "auto"
    assert "tracking the face" in result.stderr
    assert "tracking the face: done" in result.stderr
    monkeypatch.setenv("MDLA_PROGRESS", "0")
    quiet = CliRunner().invoke(app, ["read", str(video), "--roi", "auto", "--json"])
    assert quiet.exit_code == 0, quiet.output
    assert "tracking the face" not in quiet.stderr
