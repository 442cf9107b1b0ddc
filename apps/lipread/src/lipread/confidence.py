"""How sure the model is of a reading, from its CTC posteriors.

    p_t = softmax(logits_t)                 per-frame posteriors over the 28 classes
    path_t = argmax_c p_t(c)                the greedy CTC path
    runs R_1..R_n                           maximal runs of one non-blank label c_k on the path:
                                            the characters (and spaces) the reading emits
    confidence = exp(1/n sum_k log(mean_{t in R_k} p_t(c_k)))

i.e. the geometric mean, over the emitted characters, of each character's mean posterior over
the frames that emit it; 0.0 when the reading holds no letter. Blank frames are left out on
purpose: a still or flat clip is read as mostly blank with high certainty, and counting those
frames (the geometric mean of max p_t over all frames) rates a grey clip 0.98, above a real
sentence's 0.96. A mean per character rather than per frame keeps long confident vowels from
outweighing short unsure letters.

Measured with the synthetic demo model on the emulator (INT8): its three samples 0.97-0.98,
twelve held-out synthetic speakers 0.95-0.97; on clips that are not a mouth crop: uniform
noise 0.72, a flat grey clip 0.74, a black clip 0.70, the astronaut photo panning (a face read
whole) 0.84, her mouth cropped by MTCNN (a real mouth, unlike anything the demo saw) 0.76, the
cat photo 0.82; a moving checkerboard and a scrolling photo of coffee read as no letter at all
(0.0). LOW_CONFIDENCE sits between the two groups (tests/lipread/test_confidence.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lipread.grid import BLANK

Array = np.ndarray[Any, Any]
LOW_CONFIDENCE = 0.9
SPACE = 1


def posteriors(logits: Array) -> Array:
    """(T, classes) logits -> (T, classes) softmax probabilities, float64."""
    z = logits.astype(np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def character_runs(path: Array) -> list[tuple[int, int, int]]:
    """(label, start, end) of each maximal run of one non-blank label; end exclusive."""
    runs: list[tuple[int, int, int]] = []
    start = 0
    for t in range(1, len(path) + 1):
        if t == len(path) or path[t] != path[start]:
            if path[start] != BLANK:
                runs.append((int(path[start]), start, t))
            start = t
    return runs


def path_confidence(logits: Array) -> float:
    """The geometric mean over emitted characters of their mean posterior (0..1)."""
    p = posteriors(logits)
    runs = character_runs(p.argmax(axis=-1))
    if all(label == SPACE for label, _, _ in runs):
        return 0.0
    means = [p[start:end, label].mean() for label, start, end in runs]
    return float(np.exp(np.log(means).mean()))
