"""Face to mouth that holds: MTCNN every KEYFRAME frames, its O-Net alone in between.

    frame t:  keyframe (t % every == 0) or no face box yet  -> detect: P-Net, R-Net, O-Net on the
                                                               frame downscaled to DETECT_SIDE px
              otherwise                                     -> refine: O-Net on the previous
                                                               frame's face box (one 48x48 crop)
              O-Net says "no face" (p < FACE_P)             -> detect on this frame instead
              a keyframe's detection finds nothing          -> refine from the previous box
              detect finds nothing                          -> retried on each of the next
                                                               MAX_GAP frames, then only on
                                                               keyframes (a faceless clip stays
                                                               cheap and fails by name)

MTCNN's O-Net regresses the face box and its five landmarks from a 48x48 crop of a square box
around the face; fed the previous frame's (squared) box it is a tracker that moves with the
head and re-centres every frame, at one 48x48 forward pass (~5 ms here) instead of a pyramid of
P-Net passes over the whole frame (0.3-2 s). The mouth corners (landmarks 3 and 4) become crop
boxes in `roi.boxes_from_corners`, which smooths them with a centred 5-frame moving average
(the whole clip is decoded first, so the average needs no lag) and fills gaps of up to MAX_GAP.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from lipread.errors import MissingDependencyError

Array = np.ndarray[Any, Any]
KEYFRAME = 25  # full detection once a second at 25 fps
DETECT_SIDE = 480  # detection runs on the frame downscaled to this longest side (if larger)
FACE_P = 0.7  # MTCNN's own O-Net threshold
MIN_FACE = 12  # px: a smaller refined box is a lost track
MAX_GAP = 5  # the longest run of faceless frames `roi.boxes_from_corners` interpolates


@dataclass(frozen=True, slots=True)
class Face:
    box: Array  # (4,) x1, y1, x2, y2 in frame pixels
    corners: Array  # (2, 2) the mouth corners (x, y), left then right in the image


class Detector(Protocol):
    def detect(self, frame: Array) -> Face | None:
        """The largest face in an RGB frame (H, W, 3) uint8, or None."""

    def refine(self, frame: Array, box: Array) -> Face | None:
        """The face inside `box` (x1, y1, x2, y2) re-located by one landmark pass, or None."""


def square(box: Array) -> Array:
    """The square box with the same centre and the longer side (MTCNN's `rerec`)."""
    x1, y1, x2, y2 = box
    side = max(x2 - x1, y2 - y1)
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    return np.array([cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2])


def box_crop(frame: Array, box: Array) -> Array | None:
    """The pixels of `box` (x1, y1, x2, y2, rounded) in `frame`, those outside it replicating
    the edge, or None when a side is under MIN_FACE: what O-Net sees before its 48x48 resize
    (the torch `MtcnnDetector.refine` and the NPU `mtcnn.refine_crop` alike)."""
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = (round(float(v)) for v in box)
    if x2 - x1 < MIN_FACE or y2 - y1 < MIN_FACE:
        return None
    ys = np.clip(np.arange(y1, y2), 0, h - 1)
    xs = np.clip(np.arange(x1, x2), 0, w - 1)
    crop: Array = frame[ys][:, xs]
    return crop


Report = Callable[[str, int, int], None]  # (phase, done, total): `lipread.progress.phases`


def no_report(_phase: str, _done: int, _total: int) -> None:
    """The default `Report`: progress not asked for."""


def track_corners(
    frames: Array, detector: Detector, every: int = KEYFRAME, report: Report = no_report
) -> Array:
    """Mouth corners (T, 2, 2) for frames (T, H, W, 3): NaN where no face was found;
    `report("frames", t, T)` after each frame."""
    out = np.full((len(frames), 2, 2), np.nan)
    box: Array | None = None
    misses = 0  # detections failed in a row since the last face
    for t, frame in enumerate(frames):
        face = None
        keyframe = t % every == 0
        if box is not None and not keyframe:
            face = detector.refine(frame, box)
        if face is None and (box is not None or misses <= MAX_GAP or keyframe):
            face = detector.detect(frame)
            misses = 0 if face is not None else misses + 1
        if face is None and keyframe and box is not None:
            face = detector.refine(frame, box)  # the detector missed a face we track: keep it
        report("frames", t + 1, len(frames))
        if face is None:
            box = None
            continue
        out[t] = face.corners
        box = square(face.box)
    return out


class MtcnnDetector:
    """facenet-pytorch's MTCNN (weights in its wheel) as a `Detector` (needs torch)."""

    def __init__(self) -> None:
        try:
            mtcnn_cls = importlib.import_module("facenet_pytorch").MTCNN
            self.torch = importlib.import_module("torch")
        except ModuleNotFoundError as exc:
            raise MissingDependencyError(
                "--roi auto needs facenet-pytorch 2.5.3 (MTCNN, weights in its wheel) with torch "
                "and torchvision: pip install torch torchvision facenet-pytorch (the extra "
                "`mdla-lipread[auto]`); or pass --roi X,Y,W,H or --roi none"
            ) from exc
        self.mtcnn = mtcnn_cls(device="cpu", keep_all=False)

    @contextmanager
    def one_thread(self) -> Iterator[None]:
        """Run the nets on one torch thread. They are small (O-Net reads 48x48): on this
        2-core machine under load 250 tracked 640x360 frames took 1.4 s on one thread and 15 s
        on two (threads waiting on each other), and a detection 0.09 s against 2.9 s."""
        before = self.torch.get_num_threads()
        self.torch.set_num_threads(1)
        try:
            yield
        finally:
            self.torch.set_num_threads(before)

    def _tensor(self, img: Array) -> Any:
        """(H, W, 3) uint8 -> (1, 3, H, W) float32, as MTCNN feeds its nets."""
        return self.torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)[None].float()

    def detect(self, frame: Array) -> Face | None:
        h, w = frame.shape[:2]
        scale = min(1.0, DETECT_SIDE / max(h, w))
        small = frame
        if scale < 1.0:
            size = (round(h * scale), round(w * scale))
            x = self.torch.nn.functional.interpolate(
                self._tensor(frame), size=size, mode="bilinear", antialias=True
            )
            small = x[0].permute(1, 2, 0).round().clamp(0, 255).byte().numpy()
        with self.torch.no_grad():
            boxes, probs, points = self.mtcnn.detect(small, landmarks=True)
        if boxes is None or probs[0] is None:
            return None
        # select_largest (the default): the first face is the largest
        box = np.asarray(boxes[0], dtype=float) / scale
        return Face(box, np.asarray(points[0], dtype=float)[3:5] / scale)

    def refine(self, frame: Array, box: Array) -> Face | None:
        """O-Net on `box`: out of frame pixels replicate the edge; MTCNN's input scaling."""
        torch = self.torch
        pixels = box_crop(frame, box)
        if pixels is None:
            return None
        x1, y1, x2, y2 = (round(float(v)) for v in box)  # O-Net's regression is on these
        crop = torch.nn.functional.interpolate(self._tensor(pixels), size=(48, 48), mode="area")
        with torch.no_grad():
            reg, pts, prob = self.mtcnn.onet((crop - 127.5) * 0.0078125)
        if float(prob[0, 1]) < FACE_P:
            return None
        bw, bh = x2 - x1, y2 - y1
        reg, pts = reg[0].double().numpy(), pts[0].double().numpy()
        face = np.array([x1 + reg[0] * bw, y1 + reg[1] * bh, x2 + reg[2] * bw, y2 + reg[3] * bh])
        corners = np.stack([x1 + bw * pts[3:5], y1 + bh * pts[8:10]], axis=1)
        return Face(face, corners)
