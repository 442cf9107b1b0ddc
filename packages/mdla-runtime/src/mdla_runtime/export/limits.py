"""What LiteRT's Prepare refuses, checked before an op is written, so that an export never
yields a .tflite that LiteRT rejects (or aborts on) and says which op and why instead.

Measured on ai-edge-litert 2.3.0 (BUILTIN_REF); the quantizer floors these scales
(`mdla_quant.floors`), so only a graph quantized elsewhere, or edited after, meets them:

    fused RELU/RELU1/RELU6   z + roundf(f / s_out) for the bounds f (0, +-1, 6) in float32 must
                             fit int32 (kernel_util.cc `no_integer_overflow_from_quantization`)
    ADD, SUB                 2 max(s1, s2) / (2^L s_out) < 1, in double (else a CHECK aborts);
                             L = 20 for int8, 15 for int16 (16x8)
    SOFTMAX                  beta s_in 2^26 > 1, in double (else a CHECK aborts)
"""

from __future__ import annotations

import numpy as np

from mdla_ir.affine import round_half_away
from mdla_ir.attrs import SoftmaxAttrs
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import OpKind
from mdla_runtime.export.writer import ExportError

BOUNDS = {"RELU": (0.0,), "RELU1": (-1.0, 1.0), "RELU6": (0.0, 6.0)}
FIX = "quantize with mdla_quant.quantize, which floors degenerate scales"


def _scale(graph: Graph, name: str) -> float:
    q = graph.tensors[name].quant
    return float(q.scale[0]) if q is not None and len(q.scale) == 1 else float("nan")


def check_loadable(graph: Graph, op: Op) -> None:
    """Raise ExportError naming `op` when LiteRT's Prepare would refuse it."""
    fuse = str(op.fuse)
    s_out = np.float32(_scale(graph, op.outputs[0]))
    for bound in BOUNDS.get(fuse, ()):
        q = round_half_away(np.float32(bound) / s_out)  # TfLiteRound, in float32
        if not -(2.0**31) <= float(q) <= 2.0**31:
            raise ExportError(
                f"op `{op.name}` ({op.kind.name}): fused {fuse} on output scale {s_out:.3g}: "
                f"{bound:g} / scale = {bound / float(s_out):.3g} leaves int32, which LiteRT "
                f"refuses (no_integer_overflow_from_quantization); {FIX}"
            )
    if op.kind in (OpKind.ADD, OpKind.SUB):
        twice = 2.0 * max(_scale(graph, n) for n in op.inputs[:2])
        shift = 15 if graph.tensors[op.outputs[0]].dtype == "int16" else 20
        real = twice / (2.0**shift * float(s_out))
        if not real < 1.0:
            raise ExportError(
                f"op `{op.name}` ({op.kind.name}): output multiplier 2 max(s1, s2) / "
                f"(2^{shift} s_out) = {real:.4g} >= 1, which LiteRT's {op.kind.name} cannot "
                f"represent (its Prepare aborts); {FIX}"
            )
    if op.kind is OpKind.SOFTMAX:
        beta = float(np.float32(SoftmaxAttrs.of(op).beta))
        real = beta * _scale(graph, op.inputs[0]) * 2.0**26
        if not real > 1.0:
            raise ExportError(
                f"op `{op.name}` (SOFTMAX): input multiplier beta s_in 2^26 = {real:.4g} <= 1 "
                f"(input scale {_scale(graph, op.inputs[0]):.3g}), which LiteRT's SOFTMAX "
                f"cannot represent (its Prepare aborts); {FIX}"
            )
