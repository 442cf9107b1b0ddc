"""Empirical bias correction: remove the mean error that quantization adds to each channel.

Layer by layer, in graph order, for every CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED op:
    y_f = W  * x_f + b           float weights on the float network's input to the op
    y_q = W~ * x~  + b           the real value the int8 accumulator holds: dequantized weights
                                 W~ on the op's dequantized int8 input x~ (before rounding and
                                 the fused activation, so clamping does not bias the estimate)
    e[c] = mean over samples and positions of (y_q - y_f)[..., c]
and the int32 bias (int64 for a 16x8 op, the same values) becomes
round((b - e) / (s_in * s_w[c])) before the op runs, so every later op sees the corrected
network (a one-shot correction from the uncorrected network's inputs overshoots: upstream
corrections shift what downstream layers see). The float and int8
networks advance in lockstep over the first `samples` calibration inputs, which are held in
memory together with their live activations (`sequential.lockstep`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, Tensor
from mdla_ir.attrs import with_fuse
from mdla_ir.interp.registry import KERNELS
from mdla_quant.arith import round_half_away
from mdla_quant.errors import QuantError
from mdla_quant.sequential import WEIGHTED_KINDS, Env, calibration_batch, dequantize, lockstep

Array = np.ndarray[Any, Any]


def _mean_error(graph: Graph, qgraph: Graph, op: Op, floats: list[Env], ints: list[Env]) -> Array:
    plain = op.with_(attrs=with_fuse(op.attrs, "NONE"))
    kernel = KERNELS[op.kind]
    x, w, b = op.inputs[:3]
    wq = dequantize(qgraph.tensors[w], qgraph.const(w))
    total = np.zeros(graph.tensors[op.outputs[0]].shape[-1])
    for f_env, q_env in zip(floats, ints, strict=True):
        (y_f,) = kernel(plain, [f_env[x], graph.const(w), graph.const(b)], graph.layout)
        x_deq = dequantize(qgraph.tensors[x], q_env[x])
        (y_q,) = kernel(plain, [x_deq, wq, graph.const(b)], graph.layout)
        total += (y_q.astype(np.float64) - y_f).reshape(-1, y_f.shape[-1]).mean(axis=0)
    return total / len(floats)


def corrected_bias(graph: Graph, qgraph: Graph, name: str, error: Array) -> Tensor:
    """Bias `name` of `qgraph` holding the float bias minus `error`, in its own dtype and scale."""
    t = qgraph.tensors[name]
    if t.quant is None:
        raise QuantError(f"bias `{name}` has no quantization parameters")
    real = graph.const(name).astype(np.float64) - error
    q = np.clip(round_half_away(real / np.asarray(t.quant.scale)), -(2**31), 2**31 - 1)
    return Tensor(name, t.shape, t.dtype, data=q.astype(t.dtype), quant=t.quant)  # int64: 16x8


def correct_biases(
    graph: Graph, qgraph: Graph, calibration: Iterable[Any], samples: int = 16
) -> Graph:
    """`qgraph` with every weighted op's int32 bias shifted by its measured mean error."""
    batch = calibration_batch(calibration, samples, "bias correction")

    def visit(i: int, op: Op, floats: list[Env], ints: list[Env], q: Graph) -> Graph:
        if op.kind.name not in WEIGHTED_KINDS:
            return q
        error = _mean_error(graph, q, op, floats, ints)
        return q.with_(
            tensors={**q.tensors, op.inputs[2]: corrected_bias(graph, q, op.inputs[2], error)}
        )

    return lockstep(graph, qgraph, batch, visit)
