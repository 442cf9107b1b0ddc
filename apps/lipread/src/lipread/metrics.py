"""WER and CER: Levenshtein distance over words / characters, reported two ways.

`corpus_rate` is total edits / total reference units (jiwer's definition); for GRID's fixed
six-word sentences it equals the per-sentence mean WER that LipNet-PyTorch reports.
"""

from __future__ import annotations

from collections.abc import Sequence


def edit_distance(ref: Sequence[str], hyp: Sequence[str]) -> int:
    """Insertions + deletions + substitutions turning `ref` into `hyp`."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i]
        for j, h in enumerate(hyp, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h)))
        prev = cur
    return prev[-1]


def corpus_rate(refs: Sequence[str], hyps: Sequence[str], unit: str = "word") -> float:
    """Corpus WER (`unit="word"`) or CER (`unit="char"`): sum of edits / sum of lengths."""
    if len(refs) != len(hyps):
        raise ValueError(f"{len(refs)} references but {len(hyps)} hypotheses")

    def split(s: str) -> list[str]:
        return s.split() if unit == "word" else list(" ".join(s.split()))

    edits = sum(edit_distance(split(r), split(h)) for r, h in zip(refs, hyps, strict=True))
    total = sum(len(split(r)) for r in refs)
    return edits / max(total, 1)
