"""The .mdla container: constants shared by the writer, the Python reader and (mirrored by hand)
the C reader in csrc/format/manifest.c; operand counts per operation come from the op schema.

    offset 0   magic      8 bytes  b"\\x89MDLA\\r\\n\\x1a"
    offset 8   version    u32 LE   FORMAT_VERSION
    offset 12  hdr_len    u64 LE   <= MAX_HEADER (64 MiB)
    offset 20  header     msgpack map, hdr_len bytes
               padding    zero bytes up to the next multiple of 64
    data_start data       `data_size` bytes; every constant is a slice [offset, length] of it,
                          offset a multiple of 64, no two slices overlapping

Header: {"model": {...metadata...}, "operands": [...], "operations": [...], "inputs": [...],
"outputs": [...], "partitions": [...] (format 3), "data_size": n}; see `manifest.py` for the
schema of each entry.
"""

from __future__ import annotations

from mdla_ir.schema import (
    BOOL,
    FLOAT32,
    INT32,
    MAX_OP_CODE,
    NOT_AVAILABLE,
    TENSOR_BOOL8,
    TENSOR_FLOAT32,
    TENSOR_INT32,
    TENSOR_QUANT8_ASYMM,
    TENSOR_QUANT8_ASYMM_SIGNED,
    TENSOR_QUANT8_SYMM,
    TENSOR_QUANT8_SYMM_PER_CHANNEL,
    TENSOR_QUANT16_SYMM,
    arity_ok,
)

__all__ = [
    "ALIGN",
    "BOOL",
    "CPU_DEVICE",
    "ELEMENT_SIZE",
    "FLOAT32",
    "FORMAT_VERSION",
    "INT32",
    "MAGIC",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_HEADER",
    "MAX_OP_CODE",
    "MAX_RANK",
    "NOT_AVAILABLE",
    "PREAMBLE",
    "READABLE_VERSIONS",
    "SCALAR_TYPES",
    "TENSOR_BOOL8",
    "TENSOR_FLOAT32",
    "TENSOR_INT32",
    "TENSOR_QUANT8_ASYMM",
    "TENSOR_QUANT8_ASYMM_SIGNED",
    "TENSOR_QUANT8_SYMM",
    "TENSOR_QUANT8_SYMM_PER_CHANNEL",
    "TENSOR_QUANT16_SYMM",
    "TYPE_NAMES",
    "align",
    "arity_ok",
    "version_message",
]

MAGIC = b"\x89MDLA\r\n\x1a"
FORMAT_VERSION = 3  # 3: `partitions` (issue 17); 2: the `model` section's fixed key list
# Formats this reader reads: a format-2 file (no `partitions`) is one partition holding every
# operation, on the device its model section names (model.quant.device, else mtk-mdla).
READABLE_VERSIONS = (2, 3)
CPU_DEVICE = "cpu"  # the partition device the engine runs with its own C kernels
PREAMBLE = 20
ALIGN = 64
MAX_HEADER = 64 << 20
MAX_RANK = 8
MAX_ELEMENTS = (1 << 31) - 1
MAX_DEPTH = 32


def version_message(version: int) -> str:
    """Why a file of format `version` is refused (csrc/format/manifest.c prints the same words)."""
    if version < READABLE_VERSIONS[0]:
        return (
            f"format version {version}, rebuild with `workbench compile` "
            f"(this reader reads format {FORMAT_VERSION})"
        )
    return f"format version {version} is newer than this reader's {FORMAT_VERSION}: update mdla"


# Neuron operand type codes the manifest may hold (defined once, in the op schema), with the
# byte size of one tensor element; scalars carry their value inline in the header.
SCALAR_TYPES = frozenset({FLOAT32, INT32, BOOL})
ELEMENT_SIZE = {
    TENSOR_FLOAT32: 4,
    TENSOR_INT32: 4,
    TENSOR_BOOL8: 1,
    TENSOR_QUANT8_ASYMM: 1,
    TENSOR_QUANT8_SYMM_PER_CHANNEL: 1,
    TENSOR_QUANT8_SYMM: 1,
    TENSOR_QUANT8_ASYMM_SIGNED: 1,
    TENSOR_QUANT16_SYMM: 2,
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
    TENSOR_QUANT16_SYMM: "TENSOR_QUANT16_SYMM",
}

# Operation codes (0..MAX_OP_CODE, less NOT_AVAILABLE) and the operand counts per operation
# (`arity_ok`, from the forms) come from the op schema; the C reader reads the same tables from
# the generated mdla_ops.h.


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN
