"""mdla_quant's C kernels (`csrc/*.c`), built on first use into one library and loaded.

    lib = library()     # ctypes.CDLL, or None without a C compiler (callers keep numpy)

The build is mdla_emu's content-keyed C build (`mdla_emu.build.compile_c`), once per process;
`-ffp-contract=off` keeps every float32 multiply and add separately rounded, as numpy rounds
them, so each kernel can give numpy's values bit for bit.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

CSRC = Path(__file__).parent / "csrc"
SOURCES = tuple(
    CSRC / f
    for f in (
        "histogram.c",
        "depthwise.c",
        "elementwise.c",
        "soft_rounding.c",
        "taps.c",
        "block_taps.c",
        "balance.c",
        "moments.c",
        "fit_grad.c",
        "winograd.c",
    )
)
FLAGS = ("-O3", "-ffp-contract=off", "-fno-math-errno")  # never one fused multiply-add;
# no errno: sqrtf is the one instruction, so its loop vectorizes (the same correctly rounded value)
LIB_NAME = "libmdla_quant.so"

_P, _N, _F, _D = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_float, ctypes.c_ssize_t
_I = ctypes.c_int
SIGNATURES = {
    "mdla_hist_bin": (ctypes.c_int, [_P, _N, _F, _F, _P, _N, ctypes.POINTER(ctypes.c_int64)]),
    "mdla_hist_observe": (ctypes.c_int, [_P, _N, _F, _F, _P, _N, _P, _P, _P]),
    "mdla_dw_f32": (None, [_P, _N, _N, _N, _N, _P, _N, _N, _N, _N, _N, _N, _P, _P, _N, _N]),
    "mdla_neg_abs_f32": (None, [_P, _N, _P]),
    "mdla_sigmoid_tail_f32": (None, [_P, _P, _N, _P]),
    "mdla_hard_swish_f32": (None, [_P, _N, _P]),
    "mdla_sr_soft_f32": (None, [_P, _P, _P, _D, _D, _N, _N, _F, _F, _P, _P, _P, _P]),
    "mdla_sr_front_f32": (None, [_P, _D, _D, _P, _D, _D, _P, _P, _N, _N, _I, _P, _P, _P]),
    "mdla_taps_forward_f32": (None, [_P, _N, _P, _N, _P, _N, _P, _N, _N, _P]),
    "mdla_taps_grad_f32": (None, [_P, _N, _P, _N, _P, _N, _P, _N, _N, _P]),
    "mdla_sr_back_f32": (None, [_P, _P, _P, _P, _P, _N, _P, _P, _P, _P]),
    "mdla_block_dw_f32": (None, [_P, _P, _N, _N, _P, _N, _N, _N, _P]),
    "mdla_block_dw_grad_f32": (None, [_P, _P, _N, _N, _P, _N, _N, _N, _P]),
    "mdla_block_pixel_grad_f32": (None, [_P, _N, _N, _P, _P, _N, _N, _N, _P, _N, _P]),
    "mdla_block_fused_quant_f32": (None, [_P, _N, _F, _F, _I, _F, _F, _P, _P, _P]),
    "mdla_balance_kernels": (None, [_P, _P, _P, _N, _N, _P]),
    "mdla_fit_kernels_f32": (_I, [_P, _D, _D, _D, _N, _N, _N, _P, _D, _I, _P, _P, _P, _P, _P, _P]),
    "mdla_channel_sums_f32": (None, [_P, _N, _N, _P]),
    "mdla_fit_dy_f32": (None, [_P, _P, _P, _P, _N, _F, _F, _F, _N, _N, _P]),
    "mdla_wino43_filter_f32": (None, [_P, _N, _N, _P]),
    "mdla_wino43_input_f32": (_I, [_P, _N, _N, _N, _N, _N, _N, _P]),
    "mdla_wino43_output_f32": (_I, [_P, _N, _N, _N, _N, _P, _N, _N, _P, _I]),
}


@functools.cache
def library() -> ctypes.CDLL | None:
    """The built library with its functions typed, or None when it cannot be built or loaded."""
    from mdla_emu.build import BuildError, compile_c

    try:
        lib = ctypes.CDLL(str(compile_c(SOURCES, LIB_NAME, True, FLAGS, ("-lm",), generated={})))
    except (BuildError, OSError):
        return None
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib
