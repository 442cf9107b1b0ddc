from __future__ import annotations

import numpy as np

from lipread.render import Speaker, render_clip, timeline
from lipread.visemes import REST

WORDS = ("set", "blue", "by", "a", "four", "please")


def test_render_is_deterministic_from_seeds() -> None:
    a = render_clip(WORDS, 1, 2, frames=12, size=(32, 64))
    assert a.shape == (12, 32, 64, 3)
    assert a.dtype == np.uint8
    assert np.array_equal(a, render_clip(WORDS, 1, 2, frames=12, size=(32, 64)))
    assert not np.array_equal(a, render_clip(WORDS, 2, 2, frames=12, size=(32, 64)))
    assert not np.array_equal(a, render_clip(WORDS, 1, 3, frames=12, size=(32, 64)))


def test_speakers_differ_in_appearance() -> None:
    a, b = Speaker.from_seed(0), Speaker.from_seed(1)
    assert not np.allclose(a.skin, b.skin)
    assert a.mouth_w != b.mouth_w


def test_timeline_starts_and_ends_at_rest_and_moves_between() -> None:
    spk = Speaker.from_seed(4)
    traj = timeline(WORDS, spk, np.random.default_rng(0), 75)
    assert traj.shape == (75, 5)
    assert np.allclose(traj[0], REST[:5])
    assert np.allclose(traj[-1], REST[:5])
    assert traj[:, 0].max() > 0.4  # the mouth opens somewhere


def test_mouth_opening_shows_in_pixels() -> None:
    clip = render_clip(("a",), 5, 0, frames=30, size=(64, 128)).astype(float)
    dark = (clip.sum(axis=-1) < 150).sum(axis=(1, 2))
    assert dark[:2].max() < dark.max()  # closed at rest, open while speaking
