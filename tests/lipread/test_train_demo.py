"""The demo-model recipe's own pieces: word timing targets and the augmentation."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np
import torch

from lipread.grid import WORDS
from lipread.render import Speaker, timeline_with_spans

SCRIPT = Path(__file__).parents[2] / "apps/lipread/train_demo.py"


@cache
def recipe() -> ModuleType:
    """train_demo.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("train_demo", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_word_frames_label_each_word_span_and_nothing_between() -> None:
    words = ("set", "blue", "by", "a", "four", "please")
    _, spans = timeline_with_spans(words, Speaker.from_seed(3), np.random.default_rng(1), 75)
    out = recipe().word_frames(words, spans, 75)
    assert out.shape == (75,)
    for word, (start, end) in zip(words, spans, strict=True):
        inside = out[round(start) : round(end)]
        assert len(inside) > 0
        assert (inside == 1 + WORDS.index(word)).all(), word
    assert out[: round(spans[0][0])].tolist() == [0] * round(spans[0][0])  # lead-in silence
    assert out[round(spans[-1][1]) :].max() == 0  # trailing silence
    assert (out[round(spans[0][1]) : round(spans[1][0])] == 0).all()  # the pause between words


def test_augment_keeps_shape_and_range_and_flips_some_clips() -> None:
    x = torch.rand(32, 3, 4, 8, 16)
    y = recipe().augment(x, np.random.default_rng(0))
    assert y.shape == x.shape
    assert float(y.min()) >= 0.0
    assert float(y.max()) <= 1.0
    assert not torch.allclose(x, y)


def test_no_stage_trains_or_validates_on_a_held_out_speaker() -> None:
    """Training speakers are 0..119 in both stages; validation 5000+; neither touches the
    samples (9001..9003), calibration (20000+) or bench (100000+) speakers."""
    from lipread.pipeline import CALIBRATION_SPEAKERS
    from lipread.scenes import LEVELS

    for stage in recipe().STAGES.values():
        train = {job[0] for job in stage.train}
        valid = {job[0] for job in stage.valid}
        assert train == set(range(120)), stage.name
        assert not train & valid
        for speakers in (train, valid):
            assert max(speakers) < min(9001, CALIBRATION_SPEAKERS, 100_000)
    mix = recipe().STAGES["mix"]
    counts = {name: sum(job[2] == name for job in mix.train) for name in LEVELS}
    assert counts == {"easy": 120, "medium": 120, "hard": 240, "face": 30}
    assert len(set(mix.train)) == len(mix.train)  # no clip twice
    assert {job[2] for job in mix.valid} == {"easy", "medium", "hard", "face"}
    assert recipe().STAGES["mix"].base == recipe().STAGES["easy"].out


def test_clips_are_read_as_lipread_reads_them() -> None:
    """Stage 1's clips are `render_clip` resized (the first recipe's corpus, no H.264); a face
    clip is the known mouth box cropped to 32x64; the words' frames come from the same render."""
    from lipread.image import crop, resize
    from lipread.render import render_clip, spoken_sentence
    from lipread.scenes import LEVELS, render_scene

    clip, text, words = recipe().make_clip((3, 1, "easy", False))
    want = resize(render_clip(spoken_sentence(3, 1), 3, 1), (32, 64))
    np.testing.assert_array_equal(clip, np.clip(np.round(want), 0, 255).astype(np.uint8))
    assert text == " ".join(spoken_sentence(3, 1)).upper()
    assert words.shape == (75,)
    face, _, _ = recipe().make_clip((3, 4, "face", False))
    scene = render_scene(spoken_sentence(3, 4), 3, 4, LEVELS["face"])
    want = crop(scene.frames, scene.boxes, (32, 64))
    np.testing.assert_array_equal(face, np.clip(np.round(want), 0, 255).astype(np.uint8))
    coded, _, _ = recipe().make_clip((3, 2, "hard", True))  # through H.264 at crf 34
    assert coded.shape == (75, 32, 64, 3)
    raw, _, _ = recipe().make_clip((3, 2, "hard", False))
    assert not np.array_equal(coded, raw)
    assert np.abs(coded.astype(float) - raw).mean() < 8  # the same clip, compressed
