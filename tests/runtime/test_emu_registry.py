"""The schema registers the emulator's kernels: every op with emu=True has exactly one
`const EmuKernel emu_k_<op>` in mdla_emu's csrc/kernels/k_*.c (declared and tabled by the
generated emu_kernels.h), every kernel file and symbol is a schema op's, and the Neuron operation
codes of neuron_abi.h are the schema's (OpKind, NEURON_OP_NAMES)."""

from __future__ import annotations

import re

from mdla_emu.codegen import kernel_symbol, kernels_header
from mdla_emu.emulator import CSRC, KERNELS
from mdla_ir.ops import OpKind
from mdla_ir.schema import BY_CODE, NEURON_OP_NAMES

DEFINED = re.compile(r"^const EmuKernel (emu_k_\w+) =", re.MULTILINE)
# Kernels outside the table, each with its reason: the engine's cpu partitions run them, no
# target device maps the op through the emulator.
SCHEMA_OPS = {e.name for e in BY_CODE.values()}
CPU_ONLY = {
    "emu_k_transpose": "TRANSPOSE: cpu partitions only (numpy's transpose)",
    "emu_k_strided_slice": "STRIDED_SLICE: cpu partitions only (TFLite's end_mask semantics)",
}


def defined() -> dict[str, str]:
    """{kernel symbol: the k_*.c file defining it}; fails on a symbol defined twice."""
    out: dict[str, str] = {}
    for path in sorted(KERNELS.glob("k_*.c")):
        for symbol in DEFINED.findall(path.read_text()):
            assert symbol not in out, f"{symbol} in {out[symbol]} and {path.name}"
            out[symbol] = path.name
    return out


def test_every_emu_op_has_exactly_one_kernel() -> None:
    have = defined()
    missing = [e.name for e in BY_CODE.values() if e.emu and kernel_symbol(e.name) not in have]
    assert missing == []


def test_every_kernel_is_a_schema_ops_and_tabled_unless_stated() -> None:
    emu_ops = {kernel_symbol(e.name) for e in BY_CODE.values() if e.emu}
    for symbol, file in defined().items():
        kind = symbol.removeprefix("emu_k_").upper()
        assert kind in SCHEMA_OPS, f"{file}: {symbol} names no schema op"
        assert symbol in emu_ops or symbol in CPU_ONLY, f"{file}: {symbol} is not emu=True"
    assert set(CPU_ONLY).isdisjoint(emu_ops)


def test_every_kernel_file_is_named_by_an_op_it_defines() -> None:
    have = defined()
    for path in sorted(KERNELS.glob("k_*.c")):
        op = path.stem.removeprefix("k_")
        assert op.upper() in SCHEMA_OPS, f"{path.name}: not a schema op's name"
        assert have.get(f"emu_k_{op}") == path.name, f"{path.name} defines no emu_k_{op}"


def test_the_generated_header_declares_and_tables_the_emu_ops() -> None:
    text = kernels_header()
    table = text[text.index("#define EMU_KERNEL_TABLE") :]
    for e in BY_CODE.values():
        symbol = kernel_symbol(e.name)
        assert (f"extern const EmuKernel {symbol};" in text) == e.emu, e.name
        assert (f"&{symbol}," in table) == e.emu, e.name
    common = (KERNELS / "kernel_common.c").read_text()
    assert "&emu_k_" not in common  # no hand-kept table left


def test_neuron_abi_op_codes_are_the_schemas() -> None:
    text = (CSRC / "neuron_abi.h").read_text()
    body = text[text.index("typedef int32_t NeuronOperationType;") :]
    body = body[: body.index("};")]
    codes = {name: int(code) for name, code in re.findall(r"NEURON_(\w+) = (\d+),", body)}
    codes.pop("OEM_OPERATION")
    assert codes == {name: code for code, name in enumerate(NEURON_OP_NAMES)}
    for kind in OpKind:
        if kind.is_neuron:
            assert codes[kind.name] == kind.value, kind.name
