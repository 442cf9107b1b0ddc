"""GRID's sentence grammar, its 51 words, and the CTC alphabet of LipNet-PyTorch.

Six slots: command, colour, preposition, letter (a-z except w), digit, adverb; 64,000
sentences such as "set blue by a four please". Transcripts spell digits as words and letters
as single characters. The CTC alphabet is LipNet-PyTorch's: 0 = blank, 1 = space, 2..27 = A..Z.
"""

from __future__ import annotations

import numpy as np

COMMANDS = ("bin", "lay", "place", "set")
COLOURS = ("blue", "green", "red", "white")
PREPOSITIONS = ("at", "by", "in", "with")
LETTERS = tuple(c for c in "abcdefghijklmnopqrstuvwxyz" if c != "w")
DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
ADVERBS = ("again", "now", "please", "soon")
SLOTS = (COMMANDS, COLOURS, PREPOSITIONS, LETTERS, DIGITS, ADVERBS)
WORDS = tuple(w for slot in SLOTS for w in slot)  # the 51 words

BLANK = 0
ALPHABET = " ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # index + 1 is the CTC class
NUM_CLASSES = len(ALPHABET) + 1  # 28


def sample_sentence(rng: np.random.Generator) -> tuple[str, ...]:
    """One GRID sentence, a word from each slot in order."""
    return tuple(str(slot[int(rng.integers(len(slot)))]) for slot in SLOTS)


def sentence_text(words: tuple[str, ...] | list[str]) -> str:
    """The transcript as the model spells it: upper case, single spaces."""
    return " ".join(words).upper()


def encode(text: str) -> list[int]:
    """Transcript -> CTC labels (1 = space, 2..27 = A..Z); other characters are dropped."""
    return [ALPHABET.index(c) + 1 for c in text.upper() if c in ALPHABET]


def decode_labels(labels: list[int]) -> str:
    """CTC labels (no blanks) -> text, double spaces merged and the ends stripped."""
    text = "".join(ALPHABET[i - 1] for i in labels if 0 < i <= len(ALPHABET))
    while "  " in text:
        text = text.replace("  ", " ")
    return text.strip()


def greedy_ctc(logits: np.ndarray) -> tuple[str, list[int]]:
    """LipNet-PyTorch's greedy decode: argmax per step, collapse repeats, drop blanks.

    logits: (T, 28). Returns the text and the raw argmax path (the "greedy CTC path").
    """
    path = [int(i) for i in np.argmax(logits, axis=-1)]
    collapsed = [c for t, c in enumerate(path) if c != BLANK and (t == 0 or c != path[t - 1])]
    return decode_labels(collapsed), path
