"""Synthetic GRID: sentences rendered as colour mouth-crop videos (labelled synthetic).

words -> phonemes -> mouth-shape targets (`visemes`) timed at 25 fps -> frames. A "speaker"
(a seed) fixes skin and lip colour, mouth size and position, lighting, blur, noise and speaking
rate; a clip seed adds per-clip timing and position jitter. Everything is deterministic from the
two seeds: `render_clip(words, speaker=3, clip=17)` is the same array on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lipread.grid import sample_sentence
from lipread.visemes import REST, shapes

Array = np.ndarray[Any, Any]
FPS = 25
CLIP_FRAMES = 75  # GRID: 3 s at 25 fps
CROP = (64, 128)  # rendered mouth crop (H, W), LipNet-PyTorch's input size


@dataclass(frozen=True, slots=True)
class Speaker:
    """Per-speaker appearance and speaking style, drawn from one seed."""

    skin: Array  # RGB 0..1
    lip: Array
    mouth_w: float  # half-width of the mouth at rest, fraction of crop width
    mouth_h: float  # maximal half-opening, fraction of crop height
    lip_thick: float
    centre: tuple[float, float]  # (y, x) fraction of the crop
    light: tuple[float, float, float]  # gain, gradient along x, gradient along y
    blur: float  # gaussian sigma in pixels at 64x128
    noise: float  # gaussian noise sigma, 0..1 scale
    rate: float  # speaking-rate factor (duration multiplier)
    articulation: float  # how far shapes reach their targets

    @classmethod
    def from_seed(cls, seed: int) -> Speaker:
        r = np.random.default_rng([seed, 0x5EED])
        skin = np.array([0.92, 0.72, 0.58]) * r.uniform(0.45, 1.05) + r.normal(0, 0.03, 3)
        lip = skin * np.array([0.95, 0.62, 0.62]) * r.uniform(0.8, 1.0) + r.normal(0, 0.02, 3)
        return cls(
            skin=np.clip(skin, 0.05, 1.0),
            lip=np.clip(lip, 0.03, 1.0),
            mouth_w=float(r.uniform(0.24, 0.34)),
            mouth_h=float(r.uniform(0.22, 0.32)),
            lip_thick=float(r.uniform(0.07, 0.12)),
            centre=(float(r.uniform(0.45, 0.55)), float(r.uniform(0.45, 0.55))),
            light=(float(r.uniform(0.75, 1.15)), float(r.normal(0, 0.12)), float(r.normal(0, 0.1))),
            blur=float(r.uniform(0.4, 1.4)),
            noise=float(r.uniform(0.005, 0.03)),
            rate=float(r.uniform(0.85, 1.15)),
            articulation=float(r.uniform(0.8, 1.0)),
        )


def timeline(words: tuple[str, ...], spk: Speaker, rng: np.random.Generator, frames: int) -> Array:
    """Per-frame mouth parameters (T, 5): opening, width, rounding, teeth, tongue."""
    return timeline_with_spans(words, spk, rng, frames)[0]


def timeline_with_spans(
    words: tuple[str, ...], spk: Speaker, rng: np.random.Generator, frames: int
) -> tuple[Array, list[tuple[float, float]]]:
    """Mouth parameters (T, 5) and each word's (start, end) time in frames.

    Keyframes sit at each phoneme's centre; the trajectory interpolates linearly between them
    and is smoothed over 3 frames (coarticulation). Speech is scaled to fit the clip.
    """
    keys: list[Array] = []
    durs: list[float] = []
    owner: list[int] = []  # the word a keyframe belongs to (-1: the pause between words)
    rest = np.array(REST[:5])
    for i, word in enumerate(words):
        if i:  # a short, partial return towards rest between words
            keys.append(rest)
            durs.append(float(rng.uniform(0.5, 2.0)))
            owner.append(-1)
        for s in shapes(word):
            keys.append(rest + spk.articulation * (np.array(s[:5]) - rest))
            durs.append(s.frames * spk.rate * float(rng.uniform(0.85, 1.15)))
            owner.append(i)
    lead = float(rng.uniform(3, 9))
    budget = frames - lead - float(rng.uniform(3, 6))
    d = np.array(durs) * min(1.0, budget / sum(durs))
    ends = lead + np.cumsum(d)
    centres = ends - d / 2
    xs = np.concatenate([[0.0, lead - 0.5], centres, [lead + d.sum() + 0.5, frames - 1.0]])
    ys = np.stack([rest, rest, *keys, rest, rest])
    t = np.arange(frames, dtype=np.float64)
    traj = np.stack([np.interp(t, xs, ys[:, j]) for j in range(5)], axis=1)
    kernel = np.array([0.25, 0.5, 0.25])
    padded = np.concatenate([traj[:1], traj, traj[-1:]])
    smooth = sum(kernel[k] * padded[k : k + frames] for k in range(3))
    own = np.array(owner)
    spans = [
        (float(ends[own == i][0] - d[own == i][0]), float(ends[own == i][-1]))
        for i in range(len(words))
    ]
    return smooth, spans


def _blur(img: Array, sigma: float) -> Array:
    """Separable gaussian blur over axes (-3, -2) of (T, H, W, 3), edges replicated."""
    radius = max(1, int(np.ceil(2.5 * sigma)))
    x = np.arange(-radius, radius + 1)
    k = np.exp(-(x**2) / (2 * sigma**2))
    k = (k / k.sum()).astype(np.float32)
    for axis in (1, 2):
        pad = [(0, 0)] * img.ndim
        pad[axis] = (radius, radius)
        p = np.pad(img, pad, mode="edge")
        n = img.shape[axis]
        img = sum(k[i] * np.take(p, np.arange(i, i + n), axis=axis) for i in range(len(k)))
    return img


def draw(params: Array, spk: Speaker, offsets: Array, size: tuple[int, int] = CROP) -> Array:
    """Frames (T, H, W, 3) float in 0..1 from per-frame parameters and (dy, dx) offsets."""
    h, w = size
    yy = ((np.arange(h) + 0.5) / h).astype(np.float32)[None, :, None]
    xx = ((np.arange(w) + 0.5) / w).astype(np.float32)[None, None, :]
    offsets = offsets.astype(np.float32)
    cy = spk.centre[0] + offsets[:, 0][:, None, None]
    cx = spk.centre[1] + offsets[:, 1][:, None, None]
    img = draw_mouth(params, spk, xx - cx, yy - cy)
    gain, gx, gy = spk.light
    light = gain * (1.0 + gx * (xx - 0.5) + gy * (yy - 0.5))
    return img * light[..., None]


def draw_mouth(
    params: Array, spk: Speaker, dx: Array, dy: Array, base: Array | None = None
) -> Array:
    """The mouth drawn over `base` (T, H, W, 3; default the speaker's skin) at each pixel's
    offset from the mouth centre (dx, dy), in units of the mouth crop's width and height."""
    params = params.astype(np.float32)
    op, wd, rd, te, tg = (params[:, j][:, None, None] for j in range(5))
    # outer lip ellipse: spread widens, rounding narrows and thickens
    a = spk.mouth_w * (0.75 + 0.4 * wd - 0.35 * rd)
    b_in = spk.mouth_h * op
    thick = spk.lip_thick * (1.0 + 0.6 * rd)
    b_out = b_in + thick
    outer = (dx / a) ** 2 + (dy / b_out) ** 2
    a_in = a * (0.82 - 0.25 * rd)
    inner = (dx / a_in) ** 2 + (dy / np.maximum(b_in, 1e-3)) ** 2
    if base is None:
        img = np.broadcast_to(spk.skin.astype(np.float32), (*outer.shape, 3)).copy()
    else:
        img = base.copy()
    shade = 1.0 - 0.25 * np.exp(-(((dy - b_out * 1.6) / 0.08) ** 2)) * (np.abs(dx) < a * 1.2)
    img *= shade[..., None]
    lips = (outer < 1.0)[..., None]
    img = np.where(lips, spk.lip * (1.0 - 0.25 * (dy < 0)[..., None]), img)
    mouth = (inner < 1.0) & (b_in > 0.012)
    cavity = np.array([0.18, 0.05, 0.06])
    img = np.where(mouth[..., None], cavity, img)
    # teeth: a band under the upper lip (or over the lower lip for labiodentals)
    teeth_band = mouth & (dy < -b_in + (0.35 + 0.5 * te) * 2 * b_in * np.minimum(te * 1.4, 1.0))
    teeth_line = (np.abs(dy) < 0.03 * te) & (np.abs(dx) < a_in * 0.9) & (te > 0.5) & (b_in < 0.05)
    img = np.where((teeth_band | teeth_line)[..., None], np.array([0.93, 0.92, 0.86]), img)
    # tongue: a blob rising from the bottom of the opening
    tongue = mouth & (
        (dx / (a_in * 0.6)) ** 2 + ((dy - b_in * (1.0 - tg)) / (b_in * 0.6)) ** 2 < tg
    )
    return np.where(tongue[..., None], np.array([0.85, 0.35, 0.38]), img)


def rest_half_width(spk: Speaker) -> float:
    """The outer lips' half-width at rest, in mouth-crop widths (the corners' distance / 2)."""
    return float(spk.mouth_w * (0.75 + 0.4 * REST.width - 0.35 * REST.rounding))


def spoken_sentence(speaker: int, clip: int) -> tuple[str, ...]:
    """The GRID sentence synthetic `speaker` says in `clip`: the corpus's one seed convention
    (training, calibration, samples and the benchmark each use their own speaker range)."""
    return sample_sentence(np.random.default_rng([speaker, clip, 7]))


def render_clip(
    words: tuple[str, ...],
    speaker: int,
    clip: int,
    frames: int = CLIP_FRAMES,
    size: tuple[int, int] = CROP,
) -> Array:
    """A synthetic GRID clip: (T, H, W, 3) uint8 RGB mouth crops at 25 fps."""
    return render_aligned(words, speaker, clip, frames, size)[0]


def render_aligned(
    words: tuple[str, ...],
    speaker: int,
    clip: int,
    frames: int = CLIP_FRAMES,
    size: tuple[int, int] = CROP,
) -> tuple[Array, list[tuple[float, float]]]:
    """`render_clip` plus each word's (start, end) in frames (the renderer's own timing)."""
    spk = Speaker.from_seed(speaker)
    rng = np.random.default_rng([speaker, clip, 0xC11B])
    params, spans = timeline_with_spans(words, spk, rng, frames)
    drift = np.cumsum(rng.normal(0, 0.003, (frames, 2)), axis=0) + rng.normal(0, 0.03, 2)
    img = draw(params, spk, drift, size)
    img = _blur(img, spk.blur * size[0] / 64)
    img = img + np.float32(spk.noise) * rng.standard_normal(img.shape, dtype=np.float32)
    return np.clip(np.round(img * 255), 0, 255).astype(np.uint8), spans
