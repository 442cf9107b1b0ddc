from __future__ import annotations

import pytest

from lipread.metrics import corpus_rate, edit_distance


def test_edit_distance() -> None:
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance([], ["a"]) == 1
    assert edit_distance(["a", "b"], ["a", "b"]) == 0


def test_corpus_wer_and_cer() -> None:
    refs = ["SET BLUE BY A FOUR PLEASE", "BIN RED AT B TWO NOW"]
    hyps = ["SET BLUE BY E FOUR PLEASE", "BIN RED AT B TWO NOW"]
    assert corpus_rate(refs, hyps) == pytest.approx(1 / 12)
    assert corpus_rate(refs, hyps, "char") == pytest.approx(1 / (25 + 20))
    with pytest.raises(ValueError, match="hypotheses"):
        corpus_rate(refs, hyps[:1])
