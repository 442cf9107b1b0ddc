"""The C signature matcher (csrc/signature.h) and the generated op tables (mdla_ops.h) against the
op schema: the C and Python matchers agree on every op's forms and their near misses, and the
generated header holds exactly the schema's names, forms, outputs and emulator flags."""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

import pytest

from mdla_emu.codegen import ops_header
from mdla_ir.schema import BY_CODE, LETTERS, NEURON_OP_NAMES, match
from mdla_runtime.build import CSRC, compile_c, engine_sources, generated_dir

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "signature.h"

static int32_t type_at(const void *ctx, uint32_t i) { return ((const int32_t *)ctx)[i]; }

/* stdin lines: `M form n t...` (match), `N form n` (counts only), `T` (dump the table). */
int main(void) {
    char cmd[4], form[128];
    int32_t types[64];
    while (scanf("%3s", cmd) == 1) {
        if (cmd[0] == 'T') {
            for (int c = 0; c <= MDLA_MAX_OP_CODE; c++) {
                const mdla_op_signature *s = mdla_op_signature_of(c);
                printf("%d %s", c, neuron_op_name(c));
                if (s != NULL) {
                    printf(" %s %d", s->outputs, (int)s->emu);
                    for (int k = 0; k < MDLA_MAX_FORMS && s->forms[k]; k++)
                        printf(" %s", s->forms[k]);
                }
                printf("\n");
            }
            continue;
        }
        unsigned n;
        if (scanf("%127s %u", form, &n) != 2 || n > 64) return 2;
        for (unsigned i = 0; cmd[0] == 'M' && i < n; i++)
            if (scanf("%d", &types[i]) != 1) return 2;
        printf("%d\n", (int)mdla_sig_match(form, n, cmd[0] == 'M' ? type_at : NULL, types));
    }
    return 0;
}
"""
ALL_TYPES = (0, 1, 3, 4, 5, 6, 9, 11, 13, 14)


@cache
def harness(tmp: Path) -> Path:
    src = tmp / "sig_harness.c"
    src.write_text(HARNESS)
    return compile_c([src], "sig_harness", flags=(f"-I{CSRC}", "-Werror", "-pedantic"))


@pytest.fixture(scope="module")
def c_matcher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return harness(tmp_path_factory.mktemp("sig"))


def run(exe: Path, lines: list[str]) -> list[str]:
    proc = subprocess.run(
        [str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True
    )
    return proc.stdout.splitlines()


def _expand(types: str) -> str:
    """The longest plain letter string a form can match (optionals in, `x+` as two x)."""
    out = ""
    for i, c in enumerate(types):
        if c == "+":
            out += types[i - 1]
        elif c not in "[]":
            out += c
    return out


def _prefixes(types: str) -> list[str]:
    """Every letter string the form matches through its optional parts (`x+` taken 1 or 2 times)."""
    plain = _expand(types)
    return [plain[:n] for n in range(len(plain) + 1)]


def cases() -> list[tuple[str, tuple[int, ...]]]:
    """Every form with a valid type per letter, and near misses: one operand short, one extra,
    each position swapped for every other type."""
    out: list[tuple[str, tuple[int, ...]]] = []
    for entry in BY_CODE.values():
        for form in (*entry.forms, entry.outputs):
            for letters in _prefixes(form.types):
                for pick in range(3):
                    good = tuple(
                        sorted(LETTERS[c] or ALL_TYPES)[pick % len(LETTERS[c] or ALL_TYPES)]
                        for c in letters
                    )
                    out.append((form.types, good))
                    out += [(form.types, (*good, t)) for t in ALL_TYPES]
                    for i in range(len(good)):
                        out += [(form.types, (*good[:i], t, *good[i + 1 :])) for t in ALL_TYPES]
    return sorted(set(out))


def test_c_and_python_matchers_agree_on_every_form_and_near_miss(c_matcher: Path) -> None:
    todo = cases()
    lines = [f"M {f} {len(ts)} {' '.join(map(str, ts))}" for f, ts in todo]
    lines += [f"N {f} {n}" for f in sorted({f for f, _ in todo}) for n in range(16)]
    got = run(c_matcher, lines)
    want = [str(int(match(f, ts))) for f, ts in todo]
    want += [str(int(match(f, n))) for f in sorted({f for f, _ in todo}) for n in range(16)]
    assert len(got) == len(want)
    bad = [line for line, g, w in zip(lines, got, want, strict=True) if g != w]
    assert bad == []
    assert len(todo) > 2000
    assert 0 < want.count("1") < len(want)


def test_the_forms_the_emulator_took_before_the_schema() -> None:
    conv = BY_CODE[3].forms
    assert [f.types for f in conv] == ["awtiiiiiii[B[ii]]", "awtiiii[B[ii]]"]
    counts = {n for f in conv for n in range(16) if match(f.types, n)}
    assert counts == {7, 8, 10, 11, 13}
    assert {n for f in BY_CODE[4].forms for n in range(16) if match(f.types, n)} == {
        8,
        9,
        11,
        12,
        14,
    }
    # implicit with NCHW (8 operands) is told from a short explicit form by the BOOL at 7
    i32, bool_, act, w, t = 1, 6, 14, 11, 4
    implicit8 = (act, w, t, i32, i32, i32, i32, bool_)
    assert match(conv[1].types, implicit8)
    assert not match(conv[0].types, implicit8)
    assert not any(match(f.types, (act, w, t, *[i32] * 5)) for f in conv)
    assert match("a+i", (act, act, act, i32))
    assert not match("a+i", (i32,))
    assert match("aii[B[B[B]]]", (act, i32, i32, bool_, bool_))
    assert not match("aii[B[B[B]]]", (act, i32, 0, bool_))


@pytest.mark.parametrize("code", sorted(BY_CODE))
def test_slot_names_are_parallel_to_the_letters(code: int) -> None:
    for form in BY_CODE[code].forms:
        assert len(form.slots) == len(form.letters)
        assert "".join(form.letters) == form.types.replace("[", "").replace("]", "")
        assert len(set(form.slots)) == len(form.slots)


def test_generated_header_matches_the_schema(c_matcher: Path) -> None:
    rows = run(c_matcher, ["T"])
    assert len(rows) == len(NEURON_OP_NAMES) == 108
    for code, row in enumerate(rows):
        fields = row.split()
        assert fields[:2] == [str(code), NEURON_OP_NAMES[code]]
        entry = BY_CODE.get(code)
        if entry is None:
            assert len(fields) == 2
            continue
        assert fields[2:4] == [entry.outputs.types, str(int(entry.emu))]
        assert fields[4:] == [f.types for f in entry.forms]
    assert (generated_dir() / "mdla_ops.h").read_text() == ops_header()
    assert engine_sources()["mdla_ops.h"] == ops_header().encode()
    assert not (CSRC / "mdla_ops.h").exists()
    assert not (CSRC / "op_names.h").exists()
