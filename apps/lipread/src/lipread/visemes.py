"""This project's own pronunciation and viseme table for GRID's 51 words (synthetic corpus).

Each word is a list of ARPAbet-style phonemes; each phoneme belongs to a viseme class (what
the lips can show) and has a mouth-shape target: opening, width (spread), rounding
(protrusion), teeth and tongue visibility, plus a nominal duration in 25 fps frames.

Real lip reading has homophenes (/b/, /p/, /m/ look alike). So that the *synthetic* task can be
learnt, every phoneme's target differs from its class mates by enough to see at 32x64 (/p/ is
a long press of narrow, protruded lips, /b/ a short one of wide flat lips; /s/ clenched and
spread, /f/ narrow with the teeth on the lip); the class is the coarse shape, the offset the
fine one. tests/lipread/test_render.py checks that no two words of a GRID slot look alike.
"""

from __future__ import annotations

from typing import NamedTuple


class Shape(NamedTuple):
    opening: float  # 0 closed .. 1 wide open (jaw and lips)
    width: float  # 0 narrow .. 1 spread
    rounding: float  # 0 flat .. 1 rounded/protruded
    teeth: float  # 0 hidden .. 1 fully visible
    tongue: float  # 0 hidden .. 1 visible
    frames: float  # nominal duration at 25 fps


REST = Shape(0.03, 0.45, 0.10, 0.0, 0.0, 1.0)

# phoneme -> (viseme class, shape target)
PHONEMES: dict[str, tuple[str, Shape]] = {
    # vowels
    "AA": ("open", Shape(0.95, 0.55, 0.10, 0.35, 0.25, 3.0)),
    "AE": ("open", Shape(0.75, 0.80, 0.00, 0.55, 0.35, 3.0)),
    "AH": ("mid", Shape(0.55, 0.50, 0.15, 0.30, 0.15, 2.5)),
    "EH": ("mid", Shape(0.55, 0.70, 0.05, 0.60, 0.30, 2.5)),
    "IH": ("spread", Shape(0.35, 0.75, 0.00, 0.70, 0.20, 2.0)),
    "IY": ("spread", Shape(0.25, 0.95, 0.00, 0.90, 0.05, 3.0)),
    "UW": ("round", Shape(0.25, 0.15, 1.00, 0.00, 0.00, 3.0)),
    "AO": ("round", Shape(0.70, 0.30, 0.70, 0.15, 0.10, 3.0)),
    # bilabials: lips pressed together
    "P": ("bilabial", Shape(0.00, 0.10, 0.50, 0.00, 0.00, 4.0)),
    "B": ("bilabial", Shape(0.00, 0.95, 0.00, 0.00, 0.00, 2.0)),
    "M": ("bilabial", Shape(0.02, 0.55, 0.20, 0.00, 0.00, 3.0)),
    # labiodentals: upper teeth on the lower lip
    "F": ("labiodental", Shape(0.06, 0.40, 0.30, 1.00, 0.00, 3.0)),
    "V": ("labiodental", Shape(0.10, 0.20, 0.85, 1.00, 0.00, 3.0)),
    # dental: tongue tip between the teeth
    "TH": ("dental", Shape(0.22, 0.60, 0.00, 0.60, 1.00, 3.0)),
    # alveolars
    "T": ("alveolar", Shape(0.20, 0.65, 0.00, 1.00, 0.60, 2.0)),
    "D": ("alveolar", Shape(0.40, 0.45, 0.15, 0.40, 0.80, 2.5)),
    "N": ("alveolar", Shape(0.28, 0.35, 0.20, 0.60, 0.50, 2.5)),
    "S": ("alveolar", Shape(0.03, 1.00, 0.00, 1.00, 0.00, 4.0)),
    "Z": ("alveolar", Shape(0.25, 0.85, 0.45, 0.80, 0.10, 3.0)),
    "L": ("lateral", Shape(0.60, 0.60, 0.00, 0.30, 1.00, 3.0)),
    # velars
    "K": ("velar", Shape(0.40, 0.55, 0.00, 0.30, 0.00, 2.0)),
    "G": ("velar", Shape(0.50, 0.45, 0.10, 0.20, 0.00, 2.0)),
    # post-alveolars: rounded, teeth showing
    "CH": ("postalveolar", Shape(0.20, 0.30, 0.65, 0.85, 0.00, 3.0)),
    "JH": ("postalveolar", Shape(0.28, 0.25, 0.80, 0.70, 0.15, 2.5)),
    # approximants
    "R": ("rhotic", Shape(0.22, 0.30, 0.60, 0.20, 0.30, 2.5)),
    "W": ("rounded-glide", Shape(0.08, 0.05, 0.95, 0.00, 0.00, 2.0)),
    "Y": ("spread-glide", Shape(0.18, 0.90, 0.05, 0.70, 0.40, 2.0)),
}

# diphthongs are two targets
DIPHTHONGS = {"EY": ("EH", "IY"), "AY": ("AA", "IH"), "OW": ("AO", "UW"), "AW": ("AA", "UW")}

PRONUNCIATIONS: dict[str, str] = {
    # commands
    "bin": "B IH N", "lay": "L EY", "place": "P L EY S", "set": "S EH T",
    # colours
    "blue": "B L UW", "green": "G R IY N", "red": "R EH D", "white": "W AY T",
    # prepositions
    "at": "AE T", "by": "B AY", "in": "IH N", "with": "W IH TH",
    # letters (a-z without w), as spoken
    "a": "EY", "b": "B IY", "c": "S IY", "d": "D IY", "e": "IY", "f": "EH F",
    "g": "JH IY", "h": "EY CH", "i": "AY", "j": "JH EY", "k": "K EY", "l": "EH L",
    "m": "EH M", "n": "EH N", "o": "OW", "p": "P IY", "q": "K Y UW", "r": "AA R",
    "s": "EH S", "t": "T IY", "u": "Y UW", "v": "V IY", "x": "EH K S", "y": "W AY",
    "z": "Z IY",
    # digits
    "zero": "Z IH R OW", "one": "W AH N", "two": "T UW", "three": "TH R IY", "four": "F AO R",
    "five": "F AY V", "six": "S IH K S", "seven": "S EH V AH N", "eight": "EY T",
    "nine": "N AY N",
    # adverbs
    "again": "AH G EH N", "now": "N AW", "please": "P L IY Z", "soon": "S UW N",
}  # fmt: skip


def phonemes(word: str) -> list[str]:
    """A word's phonemes with diphthongs split into their two targets."""
    out: list[str] = []
    for p in PRONUNCIATIONS[word].split():
        out.extend(DIPHTHONGS.get(p, (p,)))
    return out


def visemes(word: str) -> list[str]:
    """A word's viseme classes (what the table says the lips show)."""
    return [PHONEMES[p][0] for p in phonemes(word)]


def shapes(word: str) -> list[Shape]:
    """A word's mouth-shape targets, one per phoneme."""
    return [PHONEMES[p][1] for p in phonemes(word)]
