"""mdla_quant: INT8 post-training quantization and the bit-exact int8 reference.

    outputs = mdla_quant.run_int8(qgraph, [x])              # float in/out, model layout
    raw = mdla_quant.run_int8(qgraph, [x], raw=True)         # int8 outputs, graph layout (NHWC)
    raw = mdla_quant.run_int8(qgraph, [x], raw=True, rounding="single")   # XNNPACK-style

The kernels (`mdla_quant.kernels.INT8_KERNELS`) reproduce TFLite's reference int8 kernels
bit for bit; `mdla_quant.arith` holds the fixed-point primitives they share.
"""

from __future__ import annotations

from mdla_quant.errors import KernelError, QuantError
from mdla_quant.reference import run_int8

__all__ = ["KernelError", "QuantError", "run_int8"]
