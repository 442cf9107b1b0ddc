"""The .mdla container: constants shared by the writer, the Python reader and (mirrored by hand)
the C reader in csrc/manifest.c; operand counts per operation come from the op schema.

    offset 0   magic      8 bytes  b"\\x89MDLA\\r\\n\\x1a"
    offset 8   version    u32 LE   FORMAT_VERSION
    offset 12  hdr_len    u64 LE   <= MAX_HEADER (64 MiB)
    offset 20  header     msgpack map, hdr_len bytes
               padding    zero bytes up to the next multiple of 64
    data_start data       `data_size` bytes; every constant is a slice [offset, length] of it,
                          offset a multiple of 64, no two slices overlapping

Header: {"model": {...metadata...}, "operands": [...], "operations": [...], "inputs": [...],
"outputs": [...], "data_size": n}; see `manifest.py` for the schema of each entry.
"""

from __future__ import annotations

from mdla_ir import schema

MAGIC = b"\x89MDLA\r\n\x1a"
FORMAT_VERSION = 2  # 2: the `model` section has a fixed key list (format/model.py)
PREAMBLE = 20
ALIGN = 64
MAX_HEADER = 64 << 20
MAX_RANK = 8
MAX_ELEMENTS = (1 << 31) - 1
MAX_DEPTH = 32


def version_message(version: int) -> str:
    """Why a file of format `version` is refused (csrc/manifest.c prints the same words)."""
    if version < FORMAT_VERSION:
        return (
            f"format version {version}, rebuild with `workbench compile` "
            f"(this reader reads format {FORMAT_VERSION})"
        )
    return f"format version {version} is newer than this reader's {FORMAT_VERSION}: update mdla"


# Neuron operand type codes (reference/neuron-adapter-abi.md §3b) the manifest may hold, with
# the byte size of one element (0 for scalars, whose value sits inline in the header).
FLOAT32, INT32, BOOL = 0, 1, 6
TENSOR_FLOAT32, TENSOR_INT32, TENSOR_BOOL8 = 3, 4, 9
TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_SYMM_PER_CHANNEL = 5, 11
TENSOR_QUANT8_SYMM, TENSOR_QUANT8_ASYMM_SIGNED = 13, 14
SCALAR_TYPES = frozenset({FLOAT32, INT32, BOOL})
ELEMENT_SIZE = {
    TENSOR_FLOAT32: 4,
    TENSOR_INT32: 4,
    TENSOR_BOOL8: 1,
    TENSOR_QUANT8_ASYMM: 1,
    TENSOR_QUANT8_SYMM_PER_CHANNEL: 1,
    TENSOR_QUANT8_SYMM: 1,
    TENSOR_QUANT8_ASYMM_SIGNED: 1,
}
TYPE_NAMES = {
    FLOAT32: "FLOAT32",
    INT32: "INT32",
    BOOL: "BOOL",
    TENSOR_FLOAT32: "TENSOR_FLOAT32",
    TENSOR_INT32: "TENSOR_INT32",
    TENSOR_BOOL8: "TENSOR_BOOL8",
    TENSOR_QUANT8_ASYMM: "TENSOR_QUANT8_ASYMM",
    TENSOR_QUANT8_SYMM_PER_CHANNEL: "TENSOR_QUANT8_SYMM_PER_CHANNEL",
    TENSOR_QUANT8_SYMM: "TENSOR_QUANT8_SYMM",
    TENSOR_QUANT8_ASYMM_SIGNED: "TENSOR_QUANT8_ASYMM_SIGNED",
}

# Neuron operation codes run 0..107 (§3c); the adapter marks some "not available".
MAX_OP_CODE = 107
NOT_AVAILABLE = frozenset({7, 10, 13, 15, 16, 24, 27, 42, 43, 47, 52, 60, 64, 74, 79, 82, 85})
NOT_AVAILABLE |= frozenset({92, 93, 95, 98, 101, 103, 104, 105})

# Operand counts per operation come from the op schema's forms (mdla_ir/schema.py); the C reader
# reads the same forms from the generated mdla_ops.h. Codes without forms take any count.
arity_ok = schema.arity_ok


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN
