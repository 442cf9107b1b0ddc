"""The demo-model recipe's own pieces: word timing targets and the augmentation."""

from __future__ import annotations

import importlib.util
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
