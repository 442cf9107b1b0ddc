"""Every op of the schema has all its pieces (mdla_ir.schema.PIECES): a float kernel, an int8
reference kernel, a lowering to .mdla, a .tflite emitter, an importer converter and a place in
a CPU partition; or its schema entry states "none" for the piece, with the reason. A stated
"none" for a piece the op has is stale and fails too."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

import mdla_ir.importer
from mdla_ir.interp.registry import KERNELS  # the float kernels register as mdla_ir.interp loads
from mdla_ir.kinds import OpKind
from mdla_ir.partitions import CPU_KINDS
from mdla_ir.schema import PIECES, SCHEMA, _op
from mdla_quant.kernels import INT8_KERNELS
from mdla_quant.kernels.gru import FLOAT32_KERNELS
from mdla_runtime.export.ops import emitter
from mdla_runtime.format.lower import lowering


def _names_opkind(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "OpKind"


def _imported_kinds() -> frozenset[str]:
    """The OpKind members the importer's converters name (`OpKind.X` in its sources)."""
    names: set[str] = set()
    for path in Path(mdla_ir.importer.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and _names_opkind(node.value):
                names.add(node.attr)
    return frozenset(names)


IMPORTED = _imported_kinds()
HAS: dict[str, Callable[[OpKind], bool]] = {
    "float": lambda k: k in KERNELS,
    "int8": lambda k: k in INT8_KERNELS or k in FLOAT32_KERNELS,
    "lower": lambda k: lowering(k) is not None,
    "tflite": lambda k: emitter(k) is not None,
    "import": lambda k: k.name in IMPORTED,
    "cpu": lambda k: k in CPU_KINDS,
}


def test_the_checks_cover_every_piece() -> None:
    assert tuple(HAS) == PIECES


@pytest.mark.parametrize("kind", list(SCHEMA), ids=lambda k: k.name)
def test_every_op_has_its_pieces_or_says_why_not(kind: OpKind) -> None:
    entry = SCHEMA[kind]
    missing = [p for p in PIECES if not HAS[p](kind) and entry.none_reason(p) is None]
    stale = [p for p in PIECES if HAS[p](kind) and entry.none_reason(p) is not None]
    assert missing == [], f"{kind.name} has no {missing}: add them, or none={{piece: reason}}"
    assert stale == [], f"{kind.name} states none for {stale}, which it has: drop the reason"


def test_a_none_for_an_unknown_piece_is_refused() -> None:
    with pytest.raises(ValueError, match=r"none= names \['emulator'\]"):
        _op(OpKind.ADD, ("a:a b:a fuse:i",), none={"emulator": "typo"})


# Kinds the CPU cannot run. Every other kind of the schema runs in a CPU partition, so that
# `--cpu auto` never ends in "the CPU has no kernel". These two sets only shrink:
# legalization always removes the first (or no stage emits them), the second may be left
# after legalization in the cases their reason names (check names the op; no --cpu list runs it).
REMOVED = {
    OpKind.SLICE, OpKind.BATCH_NORM, OpKind.SILU, OpKind.HARD_SIGMOID, OpKind.FLATTEN,
    OpKind.DROPOUT, OpKind.IDENTITY,
    OpKind.REDUCE_SUM, OpKind.REDUCE_MAX, OpKind.REDUCE_MIN, OpKind.CLAMP, OpKind.CONV_3D,
    OpKind.AVERAGE_POOL_3D, OpKind.DIV, OpKind.CHANNEL_SHUFFLE,
}  # fmt: skip
NO_CPU_YET: set[OpKind] = set()


def test_every_kind_legalization_leaves_runs_on_the_cpu() -> None:
    lacking = {k for k in SCHEMA if k not in CPU_KINDS}
    assert lacking == REMOVED | NO_CPU_YET, "a kind without a CPU kernel: give it one"
    for kind in REMOVED:
        reason = SCHEMA[kind].none_reason("cpu") or ""
        assert "pre-legalization construct" in reason or "no stage emits it" in reason, kind
        assert "kernel yet" not in reason, kind
    for kind in NO_CPU_YET:
        reason = SCHEMA[kind].none_reason("cpu") or ""
        assert "kernel yet" in reason, f"{kind.name}: say when it is left without a kernel"
