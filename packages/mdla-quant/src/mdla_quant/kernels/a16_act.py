"""LOGISTIC and TANH at 16 bits (int16 in and out, zero point 0), as LiteRT's reference kernels
compute them (reference_integer_ops logistic.h / tanh.h, activations.cc Prepare).

Output params are fixed: scale 1/32768, zero point 0 (`FIXED_OUTPUT16`). The input is brought to
units of 1/(3 * 4096) (so +-2^17 spans +-10.7) by an integer multiplier and right shift:

    CheckedLog2(s_in): l = round(log2 s_in) (float32 math), exact when |log2 s_in - l| < 1e-3
    shift = 12 + l (LOGISTIC: 15 - 3 input integer bits; TANH the same)
    power of two (exact, and shift == 0; TANH also shift == 1):  M = 3 << shift, shift = 0
    otherwise:  m = s_in * 4096 * 3 (double); shift = 0; while m <= 32767 / 2 and shift <= 30:
                shift += 1, m *= 2;  M = (int32) m  (truncated)
    v = (x * M + (shift > 0 ? 2^(shift-1) : 0)) >> shift       (arithmetic shift)

Both then read the 256-entry table of sigmoid(i / 24) in 0.16 fixed point (`SIGMOID_TABLE`) at
|v|, with linear interpolation on the low bits:

    LOGISTIC: h = |v| >> 9, t = |v| & 511
        r = 0x7FFF << 10 if h >= 255 else (T[h] << 9) + t * (T[h+1] - T[h])
        r = r + 2^9 if v >= 0 else 2^25 - r + 2^9 - 1;  out = r >> 10
    TANH (tanh x = 2 sigmoid(2x) - 1): h = |v| >> 8, t = |v| & 255
        r = 0xFFFF << 8 if h >= 255 else (T[h] << 8) + t * (T[h+1] - T[h])
        r = r - 2^23 + 2^7 if v >= 0 else -r + 2^23 + 2^7 - 1;  out = r >> 8 (arithmetic)
"""

from __future__ import annotations

import math

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.a16_common import fixed_output16, int16_arg, kernel16

# sigmoid(i / 24) for i in 0..255 as 0.16 fixed point: LiteRT's constant table (within about
# one count of round(65536 * sigmoid(i / 24)), saturating at 65535), which the int16 LOGISTIC
# and TANH kernels read.
SIGMOID_TABLE = np.array(
    [
        32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
        40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
        47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
        53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
        57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
        60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
        62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
        63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
        64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
        64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
        65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
        65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
        65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
        65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
        65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
        65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
        65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
        65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
        65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
        65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
        65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
        65534, 65534, 65534, 65535,
    ],
    dtype=np.int64,
)  # fmt: skip


def checked_log2(scale: float) -> tuple[int, bool]:
    """(round(log2 scale), whether scale is a power of two within 1e-3 in log2), in float32."""
    x_log2 = float(np.log(np.float32(scale)) * (np.float32(1.0) / np.log(np.float32(2.0))))
    rounded = math.copysign(math.floor(abs(x_log2) + 0.5), x_log2)  # half away from zero
    return int(rounded), abs(x_log2 - rounded) < 1e-3


def input_rescale(scale: float, kind: OpKind) -> tuple[int, int]:
    """(multiplier, right shift) taking int16 codes at `scale` to units of 1/(3 * 4096)."""
    l2, pot = checked_log2(scale)
    shift = 12 + l2
    if pot and (shift == 0 or (kind is OpKind.TANH and shift == 1)):
        return 3 << shift, 0
    m, shift = float(np.float32(scale)) * 4096.0 * 3.0, 0
    while m <= 32767.0 / 2.0 and shift <= 30:
        shift, m = shift + 1, m * 2.0
    return int(m), shift


def sigmoid16(v: Array) -> Array:
    """LOGISTIC's table read at rescaled inputs `v` (int64): int16 codes at 1/32768."""
    a = np.abs(v)
    h, t = np.minimum(a >> 9, 254), a & 511
    lo, hi = SIGMOID_TABLE[h], SIGMOID_TABLE[h + 1]
    r = np.where((a >> 9) >= 255, 0x7FFF << 10, (lo << 9) + t * (hi - lo))
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return r >> 10


def tanh16(v: Array) -> Array:
    """TANH's table read at rescaled inputs `v` (int64): int16 codes at 1/32768."""
    a = np.abs(v)
    h, t = np.minimum(a >> 8, 254), a & 255
    lo, hi = SIGMOID_TABLE[h], SIGMOID_TABLE[h + 1]
    r = np.where((a >> 8) >= 255, 0xFFFF << 8, (lo << 8) + t * (hi - lo))
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return r >> 8


@kernel16(OpKind.LOGISTIC, OpKind.TANH)
def logistic_tanh_16(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    x = int16_arg(op, args, 0).astype(np.int64)
    scale = fixed_output16(op, arg_q[0], out_q)
    m, shift = input_rescale(float(scale), op.kind)
    v = (x * m + ((1 << (shift - 1)) if shift > 0 else 0)) >> shift
    out = sigmoid16(v) if op.kind is OpKind.LOGISTIC else tanh16(v)
    return out.astype(np.int16)
