from __future__ import annotations

import numpy as np

from lipread.grid import (
    NUM_CLASSES,
    SLOTS,
    WORDS,
    decode_labels,
    encode,
    greedy_ctc,
    sample_sentence,
    sentence_text,
)


def test_grid_has_51_words_in_six_slots() -> None:
    assert [len(s) for s in SLOTS] == [4, 4, 4, 25, 10, 4]
    assert len(WORDS) == 51
    assert len(set(WORDS)) == 51
    assert "w" not in WORDS


def test_sample_sentence_is_grammatical_and_seeded() -> None:
    a = sample_sentence(np.random.default_rng(3))
    assert a == sample_sentence(np.random.default_rng(3))
    assert all(word in slot for word, slot in zip(a, SLOTS, strict=True))


def test_labels_follow_lipnet_pytorch() -> None:
    assert NUM_CLASSES == 28
    assert encode("A B") == [2, 1, 3]
    assert encode("set z") == [20, 6, 21, 1, 27]
    assert decode_labels(encode("SET BLUE")) == "SET BLUE"
    assert (
        sentence_text(("set", "blue", "by", "a", "four", "please")) == "SET BLUE BY A FOUR PLEASE"
    )


def test_greedy_ctc_collapses_repeats_drops_blanks_merges_spaces() -> None:
    path = [0, 2, 2, 0, 2, 1, 1, 0, 1, 3, 0]  # A A (blank) A space space | space B
    logits = np.eye(28)[path]
    text, raw = greedy_ctc(logits)
    assert raw == path
    assert text == "AA B"
