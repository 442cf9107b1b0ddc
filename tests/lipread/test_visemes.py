from __future__ import annotations

from lipread.grid import WORDS
from lipread.visemes import PHONEMES, PRONUNCIATIONS, phonemes, shapes, visemes


def test_every_grid_word_has_a_pronunciation_of_known_phonemes() -> None:
    assert set(PRONUNCIATIONS) == set(WORDS)
    for word in WORDS:
        assert phonemes(word), word
        assert all(p in PHONEMES for p in phonemes(word)), word


def test_diphthongs_split_and_visemes_are_classes() -> None:
    assert phonemes("lay") == ["L", "EH", "IY"]
    assert visemes("bin") == ["bilabial", "spread", "alveolar"]


def test_words_have_distinct_shape_sequences() -> None:
    seqs = {tuple(shapes(w)) for w in WORDS}
    assert len(seqs) == len(WORDS)


def test_shapes_are_in_range() -> None:
    for _, shape in PHONEMES.values():
        assert all(0.0 <= v <= 1.0 for v in shape[:5])
        assert shape.frames > 0
