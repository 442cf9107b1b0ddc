"""Probes of the 16x8 ops (int16 activations, int8 weights: QuantConfig.a16), which the target
file marks `int16 = true` with an "assumed: ..." `int16_source` until a phone runs these.

Each is a random case of `mdla_quant.a16_cases.a16_case` quantized with the op's output in int16,
between int8 boundaries the engine moves: x (int8) -> QUANTIZE -> int16 -> OP (16x8) -> int16 ->
QUANTIZE -> int8. The role "int16" makes the target file's `int16` of the op: every variant
maps, bit-exact with `run_int8`.
"""

from __future__ import annotations

from functools import partial

from mdla_ir.graph import Op, Tensor
from mdla_ir.ops import OpKind
from mdla_quant.a16_cases import a16_case
from mdla_quant.config import QuantConfig
from mdla_quant.quantize import activation_params, quantize
from workbench.probe.model import Probe, ProbeModel

KINDS = (
    OpKind.CONV_2D,
    OpKind.DEPTHWISE_CONV_2D,
    OpKind.FULLY_CONNECTED,
    OpKind.ADD,
    OpKind.MUL,
    OpKind.MEAN,
    OpKind.AVERAGE_POOL_2D,
    OpKind.MAX_POOL_2D,
    OpKind.CONCATENATION,
    OpKind.RESHAPE,
    OpKind.PAD,
    OpKind.RESIZE_NEAREST_NEIGHBOR,
    OpKind.RESIZE_BILINEAR,
    OpKind.PRELU,
    OpKind.LOGISTIC,
    OpKind.TANH,
    OpKind.SOFTMAX,
)


def _model(kind: OpKind, seed: int) -> ProbeModel:
    graph, a16, samples = a16_case(kind, seed)
    q = quantize(graph, samples, QuantConfig(a16=a16, method="minmax"))
    wide = q.tensors[a16[0]]
    assert wide.quant is not None  # quantize gave every activation its params
    amax = wide.quant.scale[0] * 32767
    out = Tensor(f"{a16[0]}/a8", wide.shape, "int8", quant=activation_params(-amax, amax))
    back = Op(OpKind.QUANTIZE, f"{out.name}/quantize", (wide.name,), (out.name,))
    tensors = {**q.tensors, out.name: out}
    return ProbeModel(q.with_(tensors=tensors, ops=(*q.ops, back), outputs=(out.name,)))


def a16_probes() -> list[Probe]:
    return [
        Probe(
            kind.name,
            f"16x8 case {seed}",
            "int16",
            partial(_model, kind, seed),
            "int16 activations (16x8) are assumed in the target file",
        )
        for kind in KINDS
        for seed in (0, 1)
    ]
