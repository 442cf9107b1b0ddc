"""The .mdla container: constants shared by the writer, the Python reader and (mirrored by hand)
the C reader in csrc/manifest.c.

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

MAGIC = b"\x89MDLA\r\n\x1a"
FORMAT_VERSION = 1
PREAMBLE = 20
ALIGN = 64
MAX_HEADER = 64 << 20
MAX_RANK = 8
MAX_ELEMENTS = (1 << 31) - 1
MAX_DEPTH = 32

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

# Input counts NNAPI allows per operation (§4), outputs are 1 for all of these. Ops not listed
# are accepted with any count. Keep in sync with `arity_ok` in csrc/manifest.c.
_UNARY = (1,)
INPUT_COUNTS: dict[int, tuple[int, ...]] = {
    0: (3,),  # ADD: a, b, fuse
    1: (7, 8, 10, 11),  # AVERAGE_POOL_2D: implicit / explicit, with or without NCHW
    3: (7, 8, 10, 11, 13),  # CONV_2D
    4: (8, 9, 11, 12, 14),  # DEPTHWISE_CONV_2D
    6: _UNARY,  # DEQUANTIZE
    9: (4,),  # FULLY_CONNECTED: input, weights, bias, fuse
    14: _UNARY,  # LOGISTIC
    17: (7, 8, 10, 11),  # MAX_POOL_2D
    18: (3,),  # MUL
    19: _UNARY,  # RELU
    20: _UNARY,  # RELU1
    21: _UNARY,  # RELU6
    22: (2,),  # RESHAPE: input, shape
    23: (3, 4, 5, 6),  # RESIZE_BILINEAR: input, out_w, out_h [, NCHW, align, half_pixel]
    25: (2, 3),  # SOFTMAX: input, beta [, axis]
    28: _UNARY,  # TANH
    30: (3,),  # DIV
    31: (3,),  # MEAN: input, axes, keep_dims
    32: (2,),  # PAD: input, paddings
    36: (3,),  # SUB
    37: (2,),  # TRANSPOSE: input, perm
    72: _UNARY,  # QUANTIZE
    99: _UNARY,  # HARD_SWISH
    102: (2, 3, 4),  # BATCH_MATMUL: lhs, rhs [, adj_x, adj_y]
}
CONCATENATION = 2  # n inputs + axis: at least 2 operands


def arity_ok(code: int, n_inputs: int, n_outputs: int) -> bool:
    if code == CONCATENATION:
        return n_inputs >= 2 and n_outputs == 1
    counts = INPUT_COUNTS.get(code)
    return counts is None or (n_inputs in counts and n_outputs == 1)


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN
