"""The reading's confidence (lipread.confidence), its stderr warning, --save-crops and --json."""

from __future__ import annotations

import errno
import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from lipread.checkpoint import load_checkpoint
from lipread.cli import app
from lipread.commands.read import DEMO_TAG
from lipread.confidence import LOW_CONFIDENCE, character_runs, path_confidence
from lipread.image import from_model_input, save_crops, to_model_input, write_png
from lipread.pipeline import read_sentence
from lipread.render import spoken_sentence
from lipread.roi import Roi
from lipread.scenes import LEVELS, render_scene
from lipread.video import write_video

SAMPLES = sorted((Path(__file__).parents[2] / "apps/lipread/samples").glob("synthetic_*.mp4"))
runner = CliRunner()


def logits_for(path: list[int], sure: float) -> np.ndarray:
    """Logits whose softmax gives `sure` to the path's label at each frame."""
    out = np.full((len(path), 28), np.log((1 - sure) / 27))
    out[np.arange(len(path)), path] = np.log(sure)
    return out


def test_runs_and_the_definition() -> None:
    runs = character_runs(np.array([0, 3, 3, 0, 1, 4, 4, 4, 0]))
    assert runs == [(3, 1, 3), (1, 4, 5), (4, 5, 8)]
    assert path_confidence(logits_for([0, 3, 3, 0, 4, 0], 0.9)) == pytest.approx(0.9)
    assert path_confidence(logits_for([0] * 10, 0.99)) == 0.0  # nothing read
    assert path_confidence(logits_for([0, 1, 1, 0], 0.99)) == 0.0  # only spaces
    # one sure and one unsure character: the geometric mean of their run means
    lg = np.concatenate([logits_for([5, 5], 0.99), logits_for([6], 0.5)])
    assert path_confidence(lg) == pytest.approx(np.sqrt(0.99 * 0.5))


def test_confidence_falls_on_clips_that_are_not_mouths(tmp_path: Path) -> None:
    """The three samples read above LOW_CONFIDENCE; noise, a flat grey clip, a checkerboard
    and a rendered full face read whole (--roi none) below it."""
    ckpt = load_checkpoint()
    mouths = [read_sentence(p, ckpt, Roi("none")).confidence for p in SAMPLES]
    rng = np.random.default_rng(0)
    others = {
        "noise": rng.integers(0, 256, (75, 64, 128, 3), dtype=np.uint8),
        "grey": np.full((75, 64, 128, 3), 128, np.uint8),
        "checker": np.kron((np.indices((8, 16)).sum(0) % 2), np.ones((8, 8)))[None, ..., None]
        .repeat(75, 0)
        .repeat(3, -1)
        .astype(np.uint8)
        * 255,
    }
    others["face"] = render_scene(spoken_sentence(7, 0), 7, 0, LEVELS["face"], frames=40).frames
    low = {}
    for name, frames in others.items():
        write_video(tmp_path / f"{name}.mp4", frames)
        low[name] = read_sentence(tmp_path / f"{name}.mp4", ckpt, Roi("none")).confidence
    assert min(mouths) > LOW_CONFIDENCE + 0.03, mouths
    assert max(low.values()) < LOW_CONFIDENCE - 0.05, low


def test_low_confidence_warns_on_stderr_and_json_has_it(tmp_path: Path) -> None:
    frames = np.random.default_rng(1).integers(0, 256, (40, 64, 128, 3), dtype=np.uint8)
    write_video(tmp_path / "noise.mp4", frames)
    result = runner.invoke(app, ["read", str(tmp_path / "noise.mp4")])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith(DEMO_TAG)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("lipread: warning: low confidence 0.")
    assert line.endswith(DEMO_TAG)
    info = json.loads(runner.invoke(app, ["read", str(SAMPLES[0]), "--json"]).stdout)
    assert info["confidence"] > LOW_CONFIDENCE
    assert "synthetic demo" in info["model"]
    assert info["roi"] == "none"


def read_png(path: Path) -> np.ndarray:
    """Decode the PNGs write_png makes (8-bit RGB, filter 0, one IDAT)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])[0] == zlib.crc32(kind + body)
        chunks[kind] = body
        pos += 12 + n
    w, h, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 2)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + 3 * w)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(h, w, 3)


def test_png_round_trip(tmp_path: Path) -> None:
    img = np.random.default_rng(2).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    write_png(tmp_path / "a.png", img)
    assert np.array_equal(read_png(tmp_path / "a.png"), img)
    pil = pytest.importorskip("PIL.Image")
    assert np.array_equal(np.asarray(pil.open(tmp_path / "a.png").convert("RGB")), img)


def test_save_crops_writes_what_the_model_read(tmp_path: Path) -> None:
    crops = np.random.default_rng(3).integers(0, 256, (17, 4, 6, 3), dtype=np.uint8)
    x = to_model_input(crops)
    assert np.array_equal(from_model_input(x), crops)
    paths = save_crops(x, tmp_path / "c", per_row=5)
    assert len(paths) == 18
    assert np.array_equal(read_png(tmp_path / "c/frame_0016.png"), crops[16])
    strip = read_png(tmp_path / "c/strip.png")
    assert strip.shape == (4 * 4, 5 * 6, 3)
    assert np.array_equal(strip[4:8, 6:12], crops[6])  # row 1, column 1
    assert not strip[12:, 12:].any()  # after the last frame


def test_cli_save_crops(tmp_path: Path) -> None:
    result = runner.invoke(app, ["read", str(SAMPLES[0]), "--save-crops", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "c").glob("frame_*.png"))) == 75
    assert read_png(tmp_path / "c/frame_0000.png").shape == (32, 64, 3)  # the demo's input
    (tmp_path / "file").write_text("")
    result = runner.invoke(app, ["read", str(SAMPLES[0]), "--save-crops", str(tmp_path / "file")])
    assert result.exit_code == 1
    assert "--save-crops" in result.stderr


def test_save_crops_on_a_full_disk_names_the_file_and_leaves_no_empty_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync

    def full(fd: int) -> None:
        if ".frame_0003.png." in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    result = runner.invoke(app, ["read", str(SAMPLES[0]), "--save-crops", str(tmp_path / "c")])
    assert result.exit_code == 1
    frame = tmp_path / "c" / "frame_0003.png"
    assert f"--save-crops {tmp_path / 'c'}: {frame}: No space left on device" in result.stderr
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [
        f"frame_{t:04d}.png" for t in range(3)
    ]


def test_features_on_a_full_disk_keep_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "f.npy"
    out.write_bytes(b"old")
    real_fsync = os.fsync

    def full(fd: int) -> None:
        if ".f.npy." in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    result = runner.invoke(app, ["features", str(SAMPLES[0]), "-o", str(out)])
    assert result.exit_code == 1
    assert f"{out}: No space left on device" in result.stderr
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.npy"]
