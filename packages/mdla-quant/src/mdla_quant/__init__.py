"""mdla_quant: INT8 post-training quantization and the bit-exact int8 reference.

    qgraph = mdla_quant.quantize(legalized, calibration, QuantConfig(method="percentile"))
    outputs = mdla_quant.run_int8(qgraph, [x])              # float in/out, model layout
    raw = mdla_quant.run_int8(qgraph, [x], raw=True)         # int8 outputs, graph layout (NHWC)
    print(mdla_quant.compare(legalized, qgraph, [[x]]))      # per tensor: cosine, SQNR, max err
    mdla_quant.simulate(float_graph, qgraph, [x], weights=False)  # only the activations' rounding

The kernels (`mdla_quant.kernels.INT8_KERNELS`) reproduce TFLite's reference int8 kernels bit
for bit; `mdla_quant.arith` holds the fixed-point primitives they share.
"""

from __future__ import annotations

from mdla_quant.compare import CompareReport, compare
from mdla_quant.config import METHODS, RECONSTRUCTIONS, QuantConfig
from mdla_quant.errors import KernelError, QuantError
from mdla_quant.quantize import calibrate, quantize
from mdla_quant.reference import run_int8
from mdla_quant.rewrites import float_rewrites
from mdla_quant.simulate import simulate
from mdla_quant.weight_fit import WEIGHT_ROUNDINGS, WEIGHT_SCALES

__all__ = [
    "METHODS",
    "RECONSTRUCTIONS",
    "WEIGHT_ROUNDINGS",
    "WEIGHT_SCALES",
    "CompareReport",
    "KernelError",
    "QuantConfig",
    "QuantError",
    "calibrate",
    "compare",
    "float_rewrites",
    "quantize",
    "run_int8",
    "simulate",
]
