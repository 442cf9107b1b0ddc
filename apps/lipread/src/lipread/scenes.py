"""Harder synthetic GRID clips: head pose, scale, jitter, lighting, blur, compression, full faces.

`render_scene(words, speaker, clip, level)` renders the sentence `render.render_aligned` renders
(same speaker, same timing) under a `Difficulty`, and returns where the mouth is:

- **pose**: yaw, pitch and roll follow a slow per-clip path within +-the level's degrees. The
  mouth and the face's features sit at depths (nose 1.0, mouth 0.6, eyes 0.5 face half-widths),
  so yaw moves them sideways (x cos(yaw) + z sin(yaw)) and foreshortens them (cos(yaw));
  pitch does the same vertically; roll rotates the whole head about its centre.
- **scale**: the mouth (and face) size is 1 +- `scale`, drawn per clip, drifting within it.
- **jitter**: a per-frame random walk of the position (fractions of the crop or frame).
- **lighting**: gain 1 +- `light`, a gradient +- `light` across the frame and a flicker.
- **blur**: extra gaussian sigma (pixels at 64x128); **compression**: `crf` is the H.264 rate
  factor the clip should be written with (`video.write_video(..., crf=level.crf)`).
- **face**: FACE_SIZE frames (4:3) of a head (skin ellipse darkening to its rim, neck, ears,
  hair, brows, eye sockets, eyes, nose) with the mouth in it, instead of a mouth crop.

The known mouth box is the app's own rule (`roi.boxes_from_corners`, unsmoothed) applied to the
mouth corners at rest: centred between them, 2.2x their distance wide, 2:1. `corners` are the
corners as drawn in each frame (they move as the lips spread and round), what a landmark
detector sees. "easy" is exactly `render.render_aligned`: the corpus the demo was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lipread.render import (
    CLIP_FRAMES,
    CROP,
    Speaker,
    _blur,
    draw_mouth,
    render_aligned,
    rest_half_width,
    timeline_with_spans,
)

Array = np.ndarray[Any, Any]
FACE_SIZE = (240, 320)  # (H, W) of full-face frames
ROI_WIDTH = 2.2  # the app's crop: 2.2x the mouth-corner distance (lipread.roi)
RIM = 0.5  # the face's skin darkens from this squared radius of its ellipse outwards


@dataclass(frozen=True, slots=True)
class Difficulty:
    name: str
    yaw: float = 0.0  # degrees, the path's largest |angle|
    pitch: float = 0.0
    roll: float = 0.0
    scale: float = 0.0  # size factor 1 +- scale
    jitter: float = 0.0  # per-frame position random walk, sigma as a fraction of the frame
    light: float = 0.0  # extra gain, gradient and flicker amplitude
    blur: float = 0.0  # extra gaussian sigma, pixels at 64x128
    crf: int = 12  # H.264 constant rate factor to write the clip with
    face: bool = False  # full-face frames instead of mouth crops


LEVELS = {
    d.name: d
    for d in (
        Difficulty("easy"),
        Difficulty("medium", 15, 10, 8, 0.12, 0.002, 0.2, 0.5, 26),
        Difficulty("hard", 30, 20, 15, 0.25, 0.004, 0.4, 1.0, 34),
        Difficulty("face", 15, 10, 8, 0.12, 0.002, 0.2, 0.5, 26, face=True),
    )
}


@dataclass(frozen=True, slots=True)
class Scene:
    frames: Array  # (T, H, W, 3) uint8 RGB
    spans: list[tuple[float, float]]  # each word's (start, end) in frames
    boxes: Array  # (T, 4) x, y, w, h: the known mouth box (the app's rule, corners at rest)
    corners: Array  # (T, 2, 2) the mouth corners (x, y) as drawn, left then right
    faces: Array  # (T, 4) x1, y1, x2, y2 of the head (the whole frame for mouth crops)


def _path(rng: np.random.Generator, frames: int, amp: float) -> Array:
    """A slow path within +-amp: a per-clip offset plus a sine of random period and phase."""
    t = np.arange(frames)
    period = rng.uniform(40, 120)
    phase = rng.uniform(0, 7)
    return amp * (0.6 * rng.uniform(-1, 1) + 0.4 * np.sin(2 * np.pi * t / period + phase))  # type: ignore[no-any-return]


def _local(px: Array, py: Array, centre: Array, roll: Array, sx: Array, sy: Array) -> Array:
    """Pixel grids -> a feature's own coordinates: minus its centre (T, 2), rotated by -roll,
    divided by its (per-frame) unit sizes in pixels. Returns (2, T, H, W)."""
    f32 = np.float32
    x = px[None] - centre[:, 0, None, None].astype(f32)
    y = py[None] - centre[:, 1, None, None].astype(f32)
    c, s = np.cos(roll).astype(f32)[:, None, None], np.sin(roll).astype(f32)[:, None, None]
    sx, sy = sx.astype(f32)[:, None, None], sy.astype(f32)[:, None, None]
    return np.stack([(c * x + s * y) / sx, (c * y - s * x) / sy])


def _place(head: Array, roll: Array, off: Array) -> Array:
    """A point at offset `off` (T, 2) from the head centre (T, 2) in the head's frame, rolled."""
    c, s = np.cos(roll), np.sin(roll)
    turned = np.stack([c * off[:, 0] - s * off[:, 1], s * off[:, 0] + c * off[:, 1]], axis=1)
    return np.asarray(head + turned)


def render_scene(
    words: tuple[str, ...], speaker: int, clip: int, level: Difficulty, frames: int = CLIP_FRAMES
) -> Scene:
    """The sentence `render_aligned` renders for (speaker, clip), under `level`."""
    spk = Speaker.from_seed(speaker)
    rng = np.random.default_rng([speaker, clip, 0xC11B])  # render_aligned's: the same timing
    params, spans = timeline_with_spans(words, spk, rng, frames)
    drift = np.cumsum(rng.normal(0, 0.003, (frames, 2)), axis=0) + rng.normal(0, 0.03, 2)
    if level == LEVELS["easy"]:
        img, _ = render_aligned(words, speaker, clip, frames)
        h, w = CROP
        mouth = np.stack([w * (spk.centre[1] + drift[:, 1]), h * (spk.centre[0] + drift[:, 0])], 1)
        zero = np.zeros(frames)
        return _scene(img, spans, params, spk, mouth, zero, zero, w * np.ones(frames), None)
    pr = np.random.default_rng([speaker, clip, sum(level.name.encode()), 0x5CE4E])
    yaw, pitch, roll = (
        np.radians(_path(pr, frames, a)) for a in (level.yaw, level.pitch, level.roll)
    )
    scale = 1.0 + _path(pr, frames, level.scale)
    h, w = FACE_SIZE if level.face else CROP
    walk = np.cumsum(pr.normal(0, level.jitter, (frames, 2)), axis=0) + drift[:, ::-1]
    py, px = np.mgrid[0:h, 0:w].astype(np.float32) + 0.5  # pixel centres
    head = None
    if level.face:
        radius = 0.3 * h * scale  # head half-width in pixels
        head = np.stack([w * (0.5 + walk[:, 0]), h * (0.5 + walk[:, 1])], axis=1)
        unit = 1.3 * radius  # mouth-crop width in pixels
        shift = np.stack([np.sin(yaw), -np.sin(pitch)], axis=1)
        mouth = _place(head, roll, (0.6 * shift + [0.0, 0.55]) * radius[:, None])
        base = _face(spk, px, py, head, roll, yaw, pitch, radius, pr)
    else:
        unit = w * scale
        mouth = np.stack([w * (spk.centre[1] + walk[:, 0]), h * (spk.centre[0] + walk[:, 1])], 1)
        base = None
    if base is None:
        du, dv = _local(px, py, mouth, roll, unit * np.cos(yaw), unit / 2 * np.cos(pitch))
        img = draw_mouth(params, spk, du, dv)
    else:  # the mouth is drawn in the window it can reach (the lips stay within 0.6 units)
        reach = 0.6 * float(np.max(unit))
        x0, y0 = (max(0, int(v - reach)) for v in mouth.min(axis=0))
        x1, y1 = (int(v + reach) + 1 for v in mouth.max(axis=0))
        win = np.s_[y0:y1, x0:x1]
        du, dv = _local(px[win], py[win], mouth, roll, unit * np.cos(yaw), unit / 2 * np.cos(pitch))
        img = base
        img[:, y0:y1, x0:x1] = draw_mouth(params, spk, du, dv, base[:, y0:y1, x0:x1])
    img = img * _light(spk, level, px / w, py / h, pr, frames)[..., None]
    # blur as strong relative to the mouth as render_aligned's is relative to its 64-row crop
    img = _blur(img.astype(np.float32), (spk.blur + level.blur) * float(np.mean(unit)) / 128)
    img = img + np.float32(spk.noise) * rng.standard_normal(img.shape, dtype=np.float32)
    out = np.clip(np.round(img * 255), 0, 255).astype(np.uint8)
    return _scene(out, spans, params, spk, mouth, roll, yaw, unit, head, radius=unit / 1.3)


def _scene(
    img: Array,
    spans: list[tuple[float, float]],
    params: Array,
    spk: Speaker,
    mouth: Array,
    roll: Array,
    yaw: Array,
    unit: Array,
    head: Array | None,
    radius: Array | None = None,
) -> Scene:
    """The known boxes (rest corners), the drawn corners and the head boxes of a render."""
    wd, rd = params[:, 1], params[:, 2]
    drawn = spk.mouth_w * (0.75 + 0.4 * wd - 0.35 * rd) * unit * np.cos(yaw)
    rest = rest_half_width(spk) * unit * np.cos(yaw)

    def corners(half: Array) -> Array:
        zero = np.zeros_like(half)
        return np.stack([_place(mouth, roll, np.stack([s * half, zero], 1)) for s in (-1, 1)], 1)

    t, h, w = img.shape[:3]
    faces = np.tile([0.0, 0.0, w, h], (t, 1))
    if head is not None and radius is not None:
        size = radius[:, None] * [1.0, 1.25]
        faces = np.concatenate([head - size, head + size], axis=1)
    return Scene(img, spans, _boxes(corners(rest)), corners(drawn), faces)


def _boxes(corners: Array) -> Array:
    """Mouth corners (T, 2, 2) -> the app's crop boxes (T, 4) x, y, w, h, unsmoothed."""
    centre = corners.mean(axis=1)
    width = ROI_WIDTH * np.linalg.norm(corners[:, 1] - corners[:, 0], axis=1)
    return np.stack([centre[:, 0] - width / 2, centre[:, 1] - width / 4, width, width / 2], 1)


def _light(
    spk: Speaker, level: Difficulty, x: Array, y: Array, rng: np.random.Generator, frames: int
) -> Array:
    """(T, H, W) lighting: the speaker's gain and gradient, the level's extra and a flicker."""
    gain, gx, gy = spk.light
    extra = rng.uniform(-1, 1, 3) * level.light
    flicker = 1.0 + 0.25 * level.light * np.sin(np.arange(frames) / rng.uniform(2, 6))
    plane = 1.0 + (gx + extra[1]) * (x - 0.5) + (gy + extra[2]) * (y - 0.5)
    return np.asarray(gain * (1 + extra[0]) * flicker[:, None, None] * plane[None], np.float32)


def _paint(
    img: Array, px: Array, py: Array, centre: Array, roll: Array, sx: Array, sy: Array, colour: Any
) -> Array:
    """Fill the ellipse of semi-axes (sx, sy) px at `centre`, rolled, with `colour`; computed
    only in the window it can reach over the clip. Returns the (T, h, w) mask and its window."""
    reach = float(max(np.max(sx), np.max(sy)))
    x0, y0 = (max(0, int(v - reach)) for v in centre.min(axis=0))
    x1, y1 = (int(v + reach) + 1 for v in centre.max(axis=0))
    u, v = _local(px[y0:y1, x0:x1], py[y0:y1, x0:x1], centre, roll, sx, sy)
    inside = u**2 + v**2 < 1.0
    img[:, y0:y1, x0:x1][inside] = colour
    return u, v, (y0, y1, x0, x1)  # type: ignore[return-value]


def _face(
    spk: Speaker,
    px: Array,
    py: Array,
    head: Array,
    roll: Array,
    yaw: Array,
    pitch: Array,
    radius: Array,
    rng: np.random.Generator,
) -> Array:
    """A cartoon head around the mouth (T, H, W, 3): background, neck, ears, skin darkening
    towards its rim, hair, brows, eye sockets, eyes, nose.

    What makes it a face to MTCNN (issue 22: facenet's MTCNN found no face in 8 of 40 clips of
    the flat egg this was, mostly where skin and background had close colours or the light was
    dim; lowering a threshold or rescaling the frame did not help): the shading of the rim,
    ears and neck outline the head against any background, and the eyes read dark at P-Net's
    12-pixel scale (a shadowed socket, grey sclera, a larger iris) rather than as white blobs.
    The app's mouth box (2.2x the corner distance) spans most of the lower face, so the rim's
    shading reaches the corners of the known-box crops: the face-level crops changed with this
    look (the demo model of train_demo.py's stage 2 was trained on it)."""
    t = len(head)
    h, w = px.shape
    back = rng.uniform(0.2, 0.8, 3) * (0.8 + 0.4 * (py / h))[..., None]
    img = np.broadcast_to(back.astype(np.float32), (t, h, w, 3)).copy()
    shift = np.stack([np.sin(yaw), -np.sin(pitch)], axis=1)
    cy, cp = np.cos(yaw), np.cos(pitch)
    neck = _place(head, roll, np.array([0.0, 1.2]) * radius[:, None])
    _paint(img, px, py, neck, roll, 0.55 * radius, 0.6 * radius, spk.skin * 0.7)
    for side in (-1, 1):
        ear = _place(head, roll, np.array([side * 0.97, 0.0]) * radius[:, None])
        _paint(img, px, py, ear, roll, 0.16 * radius, 0.3 * radius, spk.skin * 0.85)
    u, v, (y0, y1, x0, x1) = _paint(img, px, py, head, roll, radius, 1.25 * radius, spk.skin)
    r2 = u**2 + v**2
    skin = r2 < 1.0
    rim = np.clip((r2[skin] - RIM) / (1.0 - RIM), 0.0, 1.0)
    img[:, y0:y1, x0:x1][skin] *= (1.0 - 0.45 * rim)[:, None]
    hair = skin & (v < -0.62)
    img[:, y0:y1, x0:x1][hair] = rng.uniform(0.05, 0.35) * np.array([1.0, 0.8, 0.6])
    for side in (-1, 1):
        eye = _place(head, roll, (0.5 * shift + [side * 0.4, -0.3]) * radius[:, None])
        brow = _place(head, roll, (0.5 * shift + [side * 0.4, -0.52]) * radius[:, None])
        _paint(img, px, py, brow, roll, 0.22 * radius * cy, 0.06 * radius * cp, 0.12)
        _paint(img, px, py, eye, roll, 0.24 * radius * cy, 0.14 * radius * cp, spk.skin * 0.55)
        _paint(img, px, py, eye, roll, 0.16 * radius * cy, 0.08 * radius * cp, 0.8)
        _paint(img, px, py, eye, roll, 0.08 * radius * cy, 0.08 * radius * cp, 0.08)
    nose = _place(head, roll, (shift + np.array([0.0, 0.15])) * radius[:, None])
    _paint(img, px, py, nose, roll, 0.1 * radius * cy, 0.17 * radius * cp, spk.skin * 0.8)
    for side in (-1, 1):
        nostril = _place(head, roll, (shift + np.array([side * 0.05, 0.27])) * radius[:, None])
        _paint(img, px, py, nostril, roll, 0.03 * radius * cy, 0.02 * radius * cp, 0.2)
    return img
