"""Face to mouth on rendered full-face clips whose mouth boxes are known (lipread.scenes)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import lipread.roi
from lipread.cli import app
from lipread.render import spoken_sentence
from lipread.roi import Roi, boxes_from_corners, looks_like_mouth_crop, resolve_roi
from lipread.scenes import LEVELS, Difficulty, Scene, render_scene
from lipread.track import KEYFRAME, Face, track_corners
from lipread.video import write_video

runner = CliRunner()
HARD_FACE = Difficulty("hard-face", 25, 15, 12, 0.2, 0.003, 0.3, 0.8, 30, face=True)


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-row IoU of x, y, w, h boxes."""
    x1, y1 = np.maximum(a[:, 0], b[:, 0]), np.maximum(a[:, 1], b[:, 1])
    x2 = np.minimum(a[:, 0] + a[:, 2], b[:, 0] + b[:, 2])
    y2 = np.minimum(a[:, 1] + a[:, 3], b[:, 1] + b[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    return inter / (a[:, 2] * a[:, 3] + b[:, 2] * b[:, 3] - inter)  # type: ignore[no-any-return]


class StubDetector:
    """A landmark detector that knows the scene: noisy true corners and head box. Every third
    full detection misses; a refine from a box that has lost the head (IoU < 0.5) fails, as
    O-Net's would."""

    def __init__(self, scene: Scene, seed: int = 0) -> None:
        self.scene = scene
        self.index = {f.tobytes(): t for t, f in enumerate(scene.frames)}
        self.rng = np.random.default_rng(seed)
        self.detects = self.refines = 0

    def _face(self, frame: np.ndarray) -> Face:
        t = self.index[frame.tobytes()]
        box = self.scene.faces[t] + self.rng.normal(0, 3, 4)
        return Face(box, self.scene.corners[t] + self.rng.normal(0, 1.5, (2, 2)))

    def detect(self, frame: np.ndarray) -> Face | None:
        self.detects += 1
        return None if self.detects % 3 == 0 else self._face(frame)

    def refine(self, frame: np.ndarray, box: np.ndarray) -> Face | None:
        self.refines += 1
        head = self.scene.faces[self.index[frame.tobytes()]]
        as_xywh = np.array([[*box[:2], *(box[2:] - box[:2])], [*head[:2], *(head[2:] - head[:2])]])
        return self._face(frame) if iou(as_xywh[:1], as_xywh[1:])[0] >= 0.5 else None


@pytest.mark.parametrize(
    ("speaker", "level"), [(100000, LEVELS["face"]), (100001, LEVELS["face"]), (100002, HARD_FACE)]
)
def test_tracked_boxes_match_the_known_mouth_boxes(speaker: int, level: Difficulty) -> None:
    scene = render_scene(spoken_sentence(speaker, 0), speaker, 0, level)
    stub = StubDetector(scene, seed=speaker)
    boxes = boxes_from_corners(track_corners(scene.frames, stub))
    overlap = iou(boxes, scene.boxes)
    assert (overlap >= 0.7).mean() >= 0.95, np.round(overlap, 2)
    # full detection on keyframes (+ one retry for each miss), O-Net alone on the rest
    assert stub.detects <= 2 * (75 // KEYFRAME + 1)
    assert stub.refines >= 75 - stub.detects


def test_a_lost_track_is_retried_then_detected_only_on_keyframes() -> None:
    calls: list[int] = []

    class Blind:
        def detect(self, frame: np.ndarray) -> Face | None:
            calls.append(int(frame[0, 0, 0]))
            return None

        def refine(self, frame: np.ndarray, box: np.ndarray) -> Face | None:
            raise AssertionError("no box to refine")

    frames = np.arange(60, dtype=np.uint8)[:, None, None, None] * np.ones((1, 4, 4, 3), np.uint8)
    assert np.isnan(track_corners(frames, Blind(), every=25)).all()
    assert calls == [0, 1, 2, 3, 4, 5, 25, 50]  # the first MAX_GAP + 1 frames, then keyframes


@pytest.mark.parametrize("speaker", [105009, 105029])
def test_the_real_detector_tracks_a_rendered_face(speaker: int) -> None:
    """facenet's MTCNN (the float reference of `--roi auto`) on rendered full-face clips: a
    face on every frame and the tracked mouth boxes within IoU 0.7 of the known ones on >= 95%
    of frames. Before the face got a shaded rim, ears, a neck and dark eye sockets
    (`scenes._face`), MTCNN found no face on any keyframe of these two clips (two of the 8 of
    40 the face level of bench/lipread.py lost). Not every rendered face is found yet: bench
    counts the misses over its 40 clips."""
    pytest.importorskip("facenet_pytorch")
    scene = render_scene(spoken_sentence(speaker, 0), speaker, 0, LEVELS["face"])
    corners = lipread.roi.mtcnn_corners(scene.frames)
    assert np.isfinite(corners).all()
    overlap = iou(boxes_from_corners(corners), scene.boxes)
    assert (overlap >= 0.7).mean() >= 0.95, np.round(overlap, 2)


def test_easy_is_the_training_corpus_and_levels_differ() -> None:
    from lipread.render import render_clip

    words = spoken_sentence(5, 0)
    easy = render_scene(words, 5, 0, LEVELS["easy"], frames=20)
    assert np.array_equal(easy.frames, render_clip(words, 5, 0, frames=20))
    hard = render_scene(words, 5, 0, LEVELS["hard"], frames=20)
    assert hard.frames.shape == easy.frames.shape
    assert np.abs(hard.frames.astype(int) - easy.frames).mean() > 5
    again = render_scene(words, 5, 0, LEVELS["hard"], frames=20)
    assert np.array_equal(hard.frames, again.frames)


def test_the_known_box_holds_the_lips() -> None:
    scene = render_scene(spoken_sentence(7, 0), 7, 0, LEVELS["face"], frames=10)
    x, y, w, h = scene.boxes[0]
    assert scene.frames.shape[1:] == (240, 320, 3)
    img = scene.frames[0].astype(float)

    def redness(top: float) -> float:  # lips are skin x (0.95, 0.62, 0.62): redder than skin
        part = img[int(top + h / 4) : int(top + 3 * h / 4), int(x + w / 4) : int(x + 3 * w / 4)]
        return float((part[..., 0] / part[..., 1]).mean())

    assert redness(y) > 1.05 * redness(y - 0.8 * h)  # the lips against the cheeks above them
    centre = scene.corners[0].mean(axis=0)
    assert np.allclose(centre, [x + w / 2, y + h / 2], atol=3)


@pytest.mark.parametrize(
    ("size", "crop"), [((64, 128), True), ((50, 100), True), ((80, 160), True),
                       ((288, 360), False), ((240, 320), False), ((1080, 1920), False),
                       ((1920, 1080), False), ((128, 128), False)],
)  # fmt: skip
def test_what_looks_like_a_mouth_crop(size: tuple[int, int], crop: bool) -> None:
    assert looks_like_mouth_crop(*size) is crop
    roi, warnings = resolve_roi(Roi("default"), size, "v.mp4")
    assert roi.mode == ("none" if crop else "auto")
    _, warnings = resolve_roi(Roi("none"), size, "v.mp4")
    assert bool(warnings) is not crop


@pytest.fixture(scope="module")
def face_clip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Scene]:
    scene = render_scene(spoken_sentence(100001, 0), 100001, 0, LEVELS["face"])
    path = tmp_path_factory.mktemp("face") / "face.mp4"
    write_video(path, scene.frames, crf=LEVELS["face"].crf)
    return path, scene


def test_a_face_video_defaults_to_auto(
    face_clip: tuple[Path, Scene], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, scene = face_clip
    monkeypatch.setattr(lipread.roi, "mtcnn_corners", lambda frames, on=None: scene.corners)
    result = runner.invoke(app, ["read", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["roi"] == "auto"
    none = runner.invoke(app, ["read", str(path), "--roi", "none"])
    assert "--roi none, but face.mp4's 320x240 frames do not look like a mouth crop" in none.stderr


def test_a_face_video_without_facenet_says_why_auto(
    face_clip: tuple[Path, Scene], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "facenet_pytorch", None)
    monkeypatch.setenv("LIPREAD_CACHE", str(tmp_path))  # no MTCNN compiled for the NPU yet
    result = runner.invoke(app, ["read", str(face_clip[0])])
    assert result.exit_code == 2  # a missing package: the install to change
    assert "320x240 frames are not a mouth crop" in result.stderr
    assert "facenet-pytorch" in result.stderr
