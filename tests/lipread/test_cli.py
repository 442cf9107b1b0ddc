"""`lipread` through Typer's CliRunner: --help, the happy paths and every error exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import lipread.roi
from lipread.cli import app, route
from lipread.commands.read import DEMO_TAG
from lipread.frontend import cache_dir
from lipread.render import render_clip
from lipread.video import write_video

from .test_checkpoint import published_state
from .test_video import write_empty_video, write_sparse_video

runner = CliRunner()
SAMPLES = Path(__file__).parents[2] / "apps/lipread/samples"


def spoken(path: Path) -> str:
    """The sentence a sample says, from its name: synthetic_s<speaker>_<word>_..._<word>.mp4."""
    return " ".join(path.stem.split("_")[2:]).upper()


def sentence(stdout: str) -> str:
    """The sentence a `lipread` line prints, without the demo model's tag (which must be there)."""
    line = stdout.strip()
    assert line.endswith(DEMO_TAG)
    return line.removesuffix(DEMO_TAG).strip()


def sample() -> tuple[Path, str]:
    path = sorted(SAMPLES.glob("synthetic_*.mp4"))[0]
    return path, spoken(path)


@pytest.mark.parametrize(
    "args", [["--help"], ["-h"], ["read", "--help"], ["read", "-h"], ["calibrate", "--help"]]
)
def test_help(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0
    assert "Usage" in result.output


@pytest.mark.parametrize("args", [["-h"], ["read", "-h"]])
def test_help_says_lipread_video_and_synthetic_demo(args: list[str]) -> None:
    output = " ".join(runner.invoke(app, args).output.split())
    assert "SYNTHETIC DEMO" in output
    if args == ["-h"]:
        assert "lipread VIDEO" in output


def test_route_makes_read_the_default() -> None:
    assert route(["clip.mp4", "--json"]) == ["read", "clip.mp4", "--json"]
    assert route(["calibrate", "d"]) == ["calibrate", "d"]
    assert route(["--help"]) == ["--help"]


def read_json(*args: str) -> dict[str, object]:
    result = runner.invoke(app, ["read", *args, "--json"])
    assert result.exit_code == 0, result.output
    info: dict[str, object] = json.loads(result.stdout)
    return info


def test_reads_a_shipped_sample_on_the_emulator() -> None:
    path, _ = sample()
    result = runner.invoke(app, ["read", str(path)])
    assert result.exit_code == 0, result.output
    text = sentence(result.stdout)
    assert text
    assert text == read_json(str(path))["text"]
    assert set(text) <= set(" ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def test_json_reports_device_timings_and_path() -> None:
    info = read_json(str(sample()[0]))
    assert info["device"] == "mtk-mdla"
    assert info["frames"] == 75
    assert info["windows"] == 1
    path = info["ctc_path"]
    assert isinstance(path, list)
    assert len(path) == 75
    assert all(0 <= c < 28 for c in path)
    assert float(str(info["frontend_ms_per_frame"])) > 0
    run = info["run"]
    assert isinstance(run, dict)
    assert Path(run["manifest"]).is_file()


def test_int8_on_the_emulator_tracks_fp32() -> None:
    path = str(sample()[0])
    npu, fp32 = read_json(path), read_json(path, "--fp32")
    assert fp32["device"] == "cpu (torch fp32)"
    a, b = npu["ctc_path"], fp32["ctc_path"]
    assert isinstance(a, list)
    assert isinstance(b, list)
    agree = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    assert agree >= 0.9


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("synthetic_*.mp4")), ids=lambda p: p.stem)
def test_the_demo_model_reads_its_samples(path: Path) -> None:
    result = runner.invoke(app, ["read", str(path)])
    assert result.exit_code == 0, result.output
    assert sentence(result.stdout) == spoken(path)


def test_there_are_three_synthetic_samples() -> None:
    assert len(sorted(SAMPLES.glob("synthetic_*.mp4"))) == 3


def test_a_clip_longer_than_a_sentence_gets_a_note(tmp_path: Path) -> None:
    first = render_clip(("bin", "blue", "at", "f", "two", "now"), 424242, 0)
    second = render_clip(("set", "red", "with", "q", "nine", "soon"), 424242, 1)
    write_video(tmp_path / "two.mp4", np.concatenate([first, second]))
    result = runner.invoke(app, ["read", str(tmp_path / "two.mp4"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["frames"] == 150
    assert "two.mp4 is 150 frames (6.0 s)" in result.stderr
    assert f"cut it into sentences  {DEMO_TAG}" in result.stderr
    one = runner.invoke(app, ["read", str(sample()[0])])
    assert one.stderr == ""


def test_short_clip_is_padded(short_clip: Path) -> None:
    result = runner.invoke(app, ["read", str(short_clip), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["frames"] == 20


def test_missing_and_non_video_files(tmp_path: Path) -> None:
    result = runner.invoke(app, ["read", str(tmp_path / "none.mp4")])
    assert result.exit_code == 1
    assert "no such file" in result.stderr
    (tmp_path / "notes.mp4").write_text("hello")
    result = runner.invoke(app, ["read", str(tmp_path / "notes.mp4")])
    assert result.exit_code == 1
    assert "not a readable video" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_zero_frames(tmp_path: Path) -> None:
    write_empty_video(tmp_path / "empty.avi")
    result = runner.invoke(app, ["read", str(tmp_path / "empty.avi")])
    assert result.exit_code == 1
    assert "zero frames" in result.stderr


def test_frames_400_s_apart_are_refused_with_exit_1(tmp_path: Path) -> None:
    write_sparse_video(tmp_path / "sparse.mkv", 400)
    result = runner.invoke(app, ["read", str(tmp_path / "sparse.mkv")])
    assert result.exit_code == 1
    assert "resample to 30000 frames at 25 fps" in result.stderr
    assert "MemoryError" not in result.stderr


def test_no_face_names_the_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    def finder(frames: np.ndarray, on: str | None = None) -> np.ndarray:
        out = np.full((len(frames), 2, 2), 30.0)
        out[:, 1, 0] = 90.0
        out[40:60] = np.nan
        return out

    monkeypatch.setattr(lipread.roi, "mtcnn_corners", finder)
    result = runner.invoke(app, ["read", str(sample()[0]), "--roi", "auto"])
    assert result.exit_code == 1
    assert "no face found in frames 40-59 of 75" in result.stderr


def test_auto_without_facenet_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "facenet_pytorch", None)
    result = runner.invoke(app, ["read", str(sample()[0]), "--roi", "auto"])
    assert result.exit_code == 2  # the install lacks it: usage, as the workbench has it
    assert "pip install" in result.stderr
    assert "facenet-pytorch" in result.stderr


def test_wrong_checkpoint(tmp_path: Path) -> None:
    state = published_state()
    del state["gru1.weight_hh_l0"]
    torch.save(state, tmp_path / "bad.pt")
    result = runner.invoke(app, ["read", str(sample()[0]), "--weights", str(tmp_path / "bad.pt")])
    assert result.exit_code == 1
    assert "missing gru1.weight_hh_l0" in result.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [(["--roi", "1,2,3"], 2), (["--on", "phone"], 2), (["--on", "lib:/no/such/lib.so"], 4)],
)
def test_usage_and_device_errors(args: list[str], code: int) -> None:
    result = runner.invoke(app, ["read", str(sample()[0]), *args])
    assert result.exit_code == code, result.output


def test_calibrate_compiles_into_the_cache(short_clip: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    write_video(folder / "a.mp4", np.zeros((8, 64, 128, 3), np.uint8) + 120)
    (folder / "b.mp4").write_bytes(short_clip.read_bytes())
    result = runner.invoke(app, ["calibrate", str(folder)])
    assert result.exit_code == 0, result.output
    manifest = Path(result.stdout.split(": ", 1)[1].strip())
    assert manifest.is_file()
    assert manifest.parent == cache_dir()
    assert "2 videos" in json.loads(manifest.with_suffix(".json").read_text())["calibration"]
    again = runner.invoke(app, ["read", str(sample()[0]), "--json"])
    assert json.loads(again.stdout)["run"]["manifest"] == str(manifest)


def test_calibrate_needs_videos(tmp_path: Path) -> None:
    result = runner.invoke(app, ["calibrate", str(tmp_path)])
    assert result.exit_code == 1
    assert "no video files" in result.stderr


def test_convert_writes_a_torch_free_checkpoint(tmp_path: Path) -> None:
    torch.save(published_state(), tmp_path / "LipNet.pt")
    result = runner.invoke(app, ["convert", str(tmp_path / "LipNet.pt"), str(tmp_path / "l.npz")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["convert", str(tmp_path / "none.pt"), str(tmp_path / "x.npz")])
    assert result.exit_code == 1
    assert "no such checkpoint" in result.stderr


NO_TORCH = """
import sys
sys.modules["torch"] = None  # importing torch now fails, as on a phone without it
from lipread.cli import main
sys.argv = ["lipread", *sys.argv[1:]]
main()
"""


def test_runs_without_torch_from_the_shipped_manifest(tmp_path: Path) -> None:
    path, _ = sample()
    env = {**os.environ, "LIPREAD_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", NO_TORCH, str(path)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert sentence(done.stdout) == read_json(str(path))["text"]


def test_without_torch_a_pt_checkpoint_exits_2(tmp_path: Path) -> None:
    """A missing optional package is the install to change (exit 2, the pip command named),
    as in the workbench; STYLE.md's 3 is "unsupported on the target". (--fp32 and new .npz
    weights without torch: tests/workbench/test_error_lines.py.)"""
    path, _ = sample()
    torch.save(published_state(), tmp_path / "LipNet.pt")
    args = [str(path), "--weights", str(tmp_path / "LipNet.pt")]
    env = {**os.environ, "LIPREAD_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("lipread: error: ")
    assert "needs torch (pip install torch)" in line


def test_the_entry_point_guard_says_lipreads_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second Ctrl-C inside an import ends the process in mdla_runtime's handler: it says
    the line lipread gives its guard (tests/workbench/test_interrupt_import.py runs one)."""
    import contextlib

    import lipread.cli

    lines: list[str | None] = []

    @contextlib.contextmanager
    def guard(line: str | None = None) -> Iterator[None]:
        lines.append(line)
        yield

    monkeypatch.setattr(lipread.cli, "interrupt_guard", guard)
    monkeypatch.setattr(lipread.cli, "_main", lambda args: 0)
    monkeypatch.setattr(sys, "argv", ["lipread", "--version"])
    with pytest.raises(SystemExit):
        lipread.cli.main()
    assert lines == ["lipread: error: interrupted"]
