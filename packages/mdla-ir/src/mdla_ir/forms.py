"""Operand forms: how the op schema (`mdla_ir.schema`) writes an operation's operands, and the
matcher both manifest readers and the emulator's signature check apply.

An operand form names each slot and its type, in NNAPI order (reference §4):

    x:a filter:w bias:t pad_left:i ... fuse:i [nchw:B [dilation_w:i dilation_h:i]]

Types: `a` activation (int8: TENSOR_QUANT8_ASYMM_SIGNED, or TENSOR_QUANT8_SYMM as the emulator
takes it; int16 of the 16x8 ops: TENSOR_QUANT16_SYMM), `w` weights (QUANT8_SYMM_PER_CHANNEL,
QUANT8_SYMM or QUANT8_ASYMM_SIGNED), `t` TENSOR_INT32, `i` INT32, `f` FLOAT32, `F`
TENSOR_FLOAT32, `B` BOOL, `*` any; `x+` one or more;
`[...]` an optional part (nestable). `Form.types` is the compact string (`awtiiiiiii[B[ii]]`)
that the C matcher in `csrc/signature.h` and `match` below both read. Forms of one op are told
apart by type alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

# Neuron operand type codes (reference §3b) the manifest may hold; the container
# (mdla_runtime/format/container.py) and the type letters below read these.
FLOAT32, INT32, BOOL = 0, 1, 6
TENSOR_FLOAT32, TENSOR_INT32, TENSOR_BOOL8 = 3, 4, 9
TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_SYMM_PER_CHANNEL = 5, 11
TENSOR_QUANT8_SYMM, TENSOR_QUANT8_ASYMM_SIGNED = 13, 14
TENSOR_QUANT16_SYMM = 7  # int16 activations, zero point 0 (QuantConfig.a16, TFLite's 16x8)
# The operand types each type letter accepts; `*` accepts any.
LETTERS: dict[str, frozenset[int] | None] = {
    "a": frozenset({TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_SYMM, TENSOR_QUANT16_SYMM}),
    "w": frozenset(
        {TENSOR_QUANT8_SYMM_PER_CHANNEL, TENSOR_QUANT8_SYMM, TENSOR_QUANT8_ASYMM_SIGNED}
    ),
    "t": frozenset({TENSOR_INT32}),
    "i": frozenset({INT32}),
    "f": frozenset({FLOAT32}),
    "F": frozenset({TENSOR_FLOAT32}),
    "B": frozenset({BOOL}),
    "*": None,
}
_TOKEN = re.compile(r"\[|\]|([a-z_0-9]+):([awtifFB*])(\+?)|\S+")


@dataclass(frozen=True, slots=True)
class Form:
    """One operand form: `types` the compact type string, `slots` the name of each slot and
    `letters` its type (`a`, `t`, `a+`, ...), in operand order."""

    text: str
    types: str
    slots: tuple[str, ...]
    letters: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Form:
        types, slots, letters, depth = "", [], [], 0
        for m in _TOKEN.finditer(text):
            tok = m.group(0)
            if tok in "[]":
                depth += 1 if tok == "[" else -1
                if depth < 0:
                    raise ValueError(f"form {text!r}: unbalanced `]`")
                types += tok
            elif m.group(1) is None:
                raise ValueError(f"form {text!r}: bad token {tok!r} (want name:type)")
            else:
                types += m.group(2) + m.group(3)
                slots.append(m.group(1))
                letters.append(m.group(2) + m.group(3))
        if depth:
            raise ValueError(f"form {text!r}: unbalanced `[`")
        return cls(text, types, tuple(slots), tuple(letters))


def _letter_ok(letter: str, t: int | None) -> bool:
    allowed = LETTERS[letter]
    return t is None or allowed is None or t in allowed


def _group_end(p: str, k: int) -> int:
    """Index just after the `]` closing the `[` at p[k]."""
    depth = 0
    for j in range(k, len(p)):
        depth += {"[": 1, "]": -1}.get(p[j], 0)
        if depth == 0:
            return j + 1
    return len(p)


Matcher = Callable[[int, int, tuple[int | None, ...]], bool]


@cache
def _matcher(p: str) -> Matcher:
    """A backtracking matcher of form `p`: at(k, i, types) = types[i:] fit p[k:]."""

    def at(k: int, i: int, types: tuple[int | None, ...]) -> bool:
        if k == len(p):
            return i == len(types)
        c = p[k]
        if c == "]":
            return at(k + 1, i, types)
        if c == "[":
            return at(k + 1, i, types) or at(_group_end(p, k), i, types)
        if k + 1 < len(p) and p[k + 1] == "+":
            j = i
            while j < len(types) and _letter_ok(c, types[j]):
                j += 1
            return any(at(k + 2, jj, types) for jj in range(j, i, -1))
        return i < len(types) and _letter_ok(c, types[i]) and at(k + 1, i + 1, types)

    return at


def match(types_form: str, types: Sequence[int | None] | int) -> bool:
    """Whether operand `types` fit the compact form (`aai`, `a+i`, `awt...[B[ii]]`); an int
    `types` is a count (every slot matches any type), as is a None entry. Twin of
    `mdla_sig_match` in csrc/signature.h."""
    ts = (None,) * types if isinstance(types, int) else tuple(types)
    return _matcher(types_form)(0, 0, ts)
