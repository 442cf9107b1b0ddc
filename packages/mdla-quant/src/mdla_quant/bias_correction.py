"""Empirical bias correction: remove the mean error that quantization adds to each channel.

Layer by layer, in graph order, for every CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED op:
    y_f = W  * x_f + b           float weights on the float network's input to the op
    y_q = W~ * x~  + b           the real value the int8 accumulator holds: dequantized weights
                                 W~ on the op's dequantized int8 input x~ (before rounding and
                                 the fused activation, so clamping does not bias the estimate)
    e[c] = mean over samples and positions of (y_q - y_f)[..., c]
and the int32 bias becomes round((b - e) / (s_in * s_w[c])) before the op runs, so every later
op sees the corrected network (a one-shot correction from the uncorrected network's inputs
overshoots: upstream corrections shift what downstream layers see). The float and int8
networks advance in lockstep over the first `samples` calibration inputs, which are held in
memory together with their live activations.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, Tensor
from mdla_ir.interp import bind_inputs
from mdla_ir.interp.registry import KERNELS
from mdla_quant.arith import round_half_away
from mdla_quant.errors import QuantError
from mdla_quant.reference import quantize_inputs, run_op

Array = np.ndarray[Any, Any]
WEIGHTED_KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


def _dequant(t: Tensor, q: Array) -> Array:
    p = t.quant
    if p is None:
        raise QuantError(f"tensor `{t.name}` has no quantization parameters")
    scale, zp = np.asarray(p.scale, np.float32), np.asarray(p.zero_point, np.float32)
    if p.channel_dim is not None:
        shape = [1] * q.ndim
        shape[p.channel_dim] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return (scale * (q.astype(np.float32) - zp)).astype(np.float32)


def _mean_error(
    graph: Graph,
    qgraph: Graph,
    op: Op,
    floats: list[dict[str, Array]],
    ints: list[dict[str, Array]],
) -> Array:
    plain = op.with_(attrs={**op.attrs, "fuse": "NONE"})
    kernel = KERNELS[op.kind]
    x, w, b = op.inputs[:3]
    wq = _dequant(qgraph.tensors[w], qgraph.const(w))
    total = np.zeros(graph.tensors[op.outputs[0]].shape[-1])
    for f_env, q_env in zip(floats, ints, strict=True):
        (y_f,) = kernel(plain, [f_env[x], graph.const(w), graph.const(b)], graph.layout)
        x_deq = _dequant(qgraph.tensors[x], q_env[x])
        (y_q,) = kernel(plain, [x_deq, wq, graph.const(b)], graph.layout)
        total += (y_q.astype(np.float64) - y_f).reshape(-1, y_f.shape[-1]).mean(axis=0)
    return total / len(floats)


def _corrected_bias(graph: Graph, qgraph: Graph, name: str, error: Array) -> Tensor:
    t = qgraph.tensors[name]
    if t.quant is None:
        raise QuantError(f"bias `{name}` has no quantization parameters")
    real = graph.const(name).astype(np.float64) - error
    q = np.clip(round_half_away(real / np.asarray(t.quant.scale)), -(2**31), 2**31 - 1)
    return Tensor(name, t.shape, "int32", data=q.astype(np.int32), quant=t.quant)


def correct_biases(
    graph: Graph, qgraph: Graph, calibration: Iterable[Any], samples: int = 16
) -> Graph:
    """`qgraph` with every weighted op's int32 bias shifted by its measured mean error."""
    batch = [s if isinstance(s, list | tuple) else [s] for s in islice(calibration, samples)]
    if not batch:
        raise QuantError("bias correction got no calibration samples")
    mode = qgraph.provenance.rounding
    floats = [bind_inputs(graph, xs) for xs in batch]
    ints = [quantize_inputs(qgraph, xs) for xs in batch]
    tensors = dict(qgraph.tensors)
    for i, op in enumerate(graph.ops):
        if op.kind.name in WEIGHTED_KINDS:
            error = _mean_error(graph, qgraph, op, floats, ints)
            tensors[op.inputs[2]] = _corrected_bias(graph, qgraph, op.inputs[2], error)
            qgraph = qgraph.with_(tensors=dict(tensors))
        kernel = KERNELS[op.kind]
        for f_env, q_env in zip(floats, ints, strict=True):
            args = [f_env[n] if n in f_env else graph.const(n) for n in op.inputs]
            (f_env[op.outputs[0]],) = kernel(op, args, graph.layout)
            q_env[op.outputs[0]] = run_op(qgraph, i, q_env, mode)
    return qgraph
