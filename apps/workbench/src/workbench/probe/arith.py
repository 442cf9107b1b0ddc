"""Probes of the device's int8 arithmetic where TFLite's reference and the emulator can differ.

`CONV_2D/requant_wrap` (role "accumulator") settles the target's `[arith] accumulator` fact. A
1x1 convolution with s_in = 1, w = 127, s_w = 1 and s_out = 2^-17 has the real multiplier
d = 2^17, so QuantizeMultiplier gives (M, s) = (2^30, 18) and MBQM first forms x * 2^18 with
x = 127 * (q - z_in). That leaves int32 once |x| > 2^13 (|q - z_in| >= 65):

    saturate   x * 2^18 clamps to +-(2^31): the output is 127 for every positive input
    wrap       x * 2^18 is taken modulo 2^32 (TFLite's reference): inputs 1 and 64 give 127,
               65 and 127 give -128 (127 * 65 * 2^18 = 2163998720 wraps to -2130968576)

The device's output is compared with both references; the one it equals is the fact
(targetfile.py). Inputs are the probe's random codes over 64 elements, which hold both kinds.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.builders import act, const, qp, single_op_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from workbench.probe.model import Probe, ProbeModel

ACCUMULATOR_VARIANT = "requant_wrap"


def requant_wrap_graph(width: int = 64) -> Graph:
    """The 1x1 CONV_2D whose requantization overflows int32 for |q - z_in| >= 65."""
    w = const("w", np.full((1, 1, 1, 1), 127, np.int8), qp(np.array([1.0], np.float32), 0, 0))
    attrs = {
        "stride": (1, 1),
        "dilation": (1, 1),
        "padding": (0, 0, 0, 0),
        "groups": 1,
        "fuse": "NONE",
    }
    ins = [act("x", (1, 1, width, 1), qp(1.0, 0)), w]
    return single_op_qgraph(OpKind.CONV_2D, ins, (1, 1, width, 1), qp(2.0**-17, 0), attrs)


def _requant_wrap() -> ProbeModel:
    g = requant_wrap_graph()
    return ProbeModel(
        g,
        references={"saturate": g, "wrap": g},
        accumulators={"saturate": "saturate", "wrap": "wrap"},
    )


def arith_probes() -> list[Probe]:
    return [
        Probe(
            "CONV_2D",
            ACCUMULATOR_VARIANT,
            "accumulator",
            _requant_wrap,
            "s_out = 2^-17: int32 overflow in MBQM, wrap (TFLite) or saturate",
        )
    ]
