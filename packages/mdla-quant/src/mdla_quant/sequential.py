"""The float and the int8 network advanced in lockstep, op by op, over a few calibration inputs.

Sequential weight-side corrections (bias correction, AdaRound) change op i's constants from what
op i sees in both networks: its float input (the float network's value) and its int8 input
(computed by the int8 network with every earlier correction already applied, so later layers
adapt to earlier ones). `lockstep(graph, qgraph, batch, visit)` calls `visit(i, op, floats,
ints, qgraph)` before running op i in both networks; whatever graph `visit` returns is the int8
graph from then on. A value is dropped after its last use, so memory is the live activations
of `len(batch)` inputs, not all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, Tensor
from mdla_ir.interp import bind_inputs
from mdla_ir.interp.registry import KERNELS
from mdla_quant.errors import QuantError
from mdla_quant.fast_kernels import calibration_kernels
from mdla_quant.reference import graph_accumulator, graph_numerics, quantize_inputs, run_op

Array = np.ndarray[Any, Any]
Env = dict[str, Array]
Visit = Callable[[int, Op, list[Env], list[Env], Graph], Graph]
WEIGHTED_KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


def calibration_batch(calibration: Iterable[Any], samples: int, what: str) -> list[list[Any]]:
    """The first `samples` calibration inputs, each as an input list; QuantError if none."""
    batch = [list(s) if isinstance(s, list | tuple) else [s] for s in islice(calibration, samples)]
    if not batch:
        raise QuantError(f"{what} got no calibration samples")
    return batch


def dequantize(t: Tensor, q: Array) -> Array:
    """The real values of int8/int32 `q` with `t`'s (per-tensor or per-channel) parameters."""
    p = t.quant
    if p is None:
        raise QuantError(f"tensor `{t.name}` has no quantization parameters")
    scale, zp = np.asarray(p.scale, np.float32), np.asarray(p.zero_point, np.float32)
    if p.channel_dim is not None:
        shape = [1] * q.ndim
        shape[p.channel_dim] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return (scale * (q.astype(np.float32) - zp)).astype(np.float32)


def lockstep(graph: Graph, qgraph: Graph, batch: Sequence[Sequence[Any]], visit: Visit) -> Graph:
    """Run both networks over `batch` (lists of model-layout inputs), calling `visit` before
    each op; the final int8 graph."""
    if not batch:
        raise QuantError(
            f"graph `{graph.name}`: no calibration samples to correct the weights with"
        )
    mode = graph_numerics(qgraph).rounding
    accumulator = graph_accumulator(qgraph)
    floats = [bind_inputs(graph, list(xs)) for xs in batch]
    ints = [quantize_inputs(qgraph, list(xs)) for xs in batch]
    last_use = {n: i for i, op in enumerate(graph.ops) for n in op.inputs}
    keep = set(graph.outputs)
    kernels = {**KERNELS, **calibration_kernels()}  # C kernels with the interpreter's values
    for i, op in enumerate(graph.ops):
        qgraph = visit(i, op, floats, ints, qgraph)
        kernel = kernels[op.kind]
        for f_env, q_env in zip(floats, ints, strict=True):
            args = [f_env[n] if n in f_env else graph.const(n) for n in op.inputs]
            (f_env[op.outputs[0]],) = kernel(op, args, graph.layout)
            q_env[op.outputs[0]] = run_op(qgraph, i, q_env, mode, accumulator)
            for name in op.inputs:
                if last_use.get(name) == i and name not in keep:
                    f_env.pop(name, None)
                    q_env.pop(name, None)
    return qgraph
