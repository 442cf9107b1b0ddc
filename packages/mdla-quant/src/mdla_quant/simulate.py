"""`simulate`: the float graph with only some of the int8 graph's roundings, to tell which one
costs the accuracy.

    fw = float_rewrites(graph, calibration, config)           # what quantize() rounded
    simulate(fw, qgraph, [x], weights=False)                  # float weights, int8 activations
    simulate(fw, qgraph, [x], activations=False)              # int8 weights, float activations

In float arithmetic (the float interpreter, `mdla_ir.evaluate`):
  weights       every constant the int8 graph stores as int8 or int32 (filters, biases, constant
                operands) is replaced by its dequantized value, scale * (q - zero_point), per
                channel where it is per channel;
  activations   every graph input and op output the int8 graph holds as int8 (or int16) is
                rounded to that tensor's grid,
                scale * (clip(round_half_away(x / scale) + zp, qmin, qmax) - zp);
                a tensor named in `int16` gets the 16x8 grid of the same range instead:
                zp = 0, scale = max(|lo|, |hi|) / 32767 with [lo, hi] its int8 grid's range.

With neither it is `mdla_ir.run_float`. With both it is close to `run_int8` but not equal: the
int8 kernels also round their requantization multipliers and some intermediates. With
`weights=False` the weights are exact, so what is left is the activation grids' own cost. That
is not a bound on AdaRound, whose asymmetric fit
(int8 inputs, float targets) can undo part of the activations' error through the weights.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from mdla_ir import Graph, Tensor, evaluate
from mdla_ir.interp import to_model_layout
from mdla_quant.arith import round_half_away
from mdla_quant.errors import QuantError

Array = np.ndarray[Any, Any]


def _dequantized(t: Tensor) -> Array:
    assert t.data is not None  # the caller picked quantized constants
    assert t.quant is not None
    q = np.asarray(t.data).astype(np.float64)
    scale = np.asarray(t.quant.scale, np.float64)
    zero = np.asarray(t.quant.zero_point, np.float64)
    if t.quant.channel_dim is not None and scale.size > 1:
        shape = [1] * q.ndim
        shape[t.quant.channel_dim] = -1
        scale, zero = scale.reshape(shape), zero.reshape(shape)
    out: Array = ((q - zero) * scale).astype(np.float32)
    return out


def _check_pair(graph: Graph, qgraph: Graph) -> None:
    missing = [n for n in (*graph.inputs, *graph.outputs) if n not in qgraph.tensors]
    if missing or graph.layout != qgraph.layout:
        raise QuantError(
            f"simulate: `{qgraph.name}` is not an int8 graph of `{graph.name}` (tensors "
            f"{missing} are not in it, or the layouts {graph.layout}/{qgraph.layout} differ): "
            "pass the float graph it was quantized from (`float_rewrites(graph, calibration, "
            "config)` when the config equalizes)"
        )


def with_int8_weights(graph: Graph, qgraph: Graph) -> Graph:
    """`graph` with each constant that `qgraph` quantized replaced by its dequantized value."""
    tensors = dict(graph.tensors)
    for name, t in graph.tensors.items():
        q = qgraph.tensors.get(name)
        if t.data is None or q is None or q.data is None or q.quant is None:
            continue
        if q.dtype not in ("int8", "int32", "int64"):  # float32 constants of cpu float ops stay
            continue
        if np.shape(q.data) != np.shape(t.data):
            raise QuantError(
                f"simulate: constant `{name}` is {np.shape(t.data)} in `{graph.name}` "
                f"but {np.shape(q.data)} in `{qgraph.name}`"
            )
        tensors[name] = Tensor(name, t.shape, "float32", data=_dequantized(q))
    return graph.with_(tensors=tensors)


LEVELS = {"int8": (-128, 127), "int16": (-32768, 32767)}
Grid = tuple[float, float, int, int]  # scale, zero point, qmin, qmax


def int16_grid(scale: float, zero: float) -> Grid:
    """The 16x8 grid of an int8 grid's range [scale * (-128 - zero), scale * (127 - zero)]:
    symmetric, zero point 0, scale max(|lo|, |hi|) / 32767."""
    wide = max(abs(scale * (-128 - zero)), abs(scale * (127 - zero)))
    return float(np.float32(wide / 32767.0)), 0.0, *LEVELS["int16"]


def activation_grids(graph: Graph, qgraph: Graph, int16: Collection[str] = ()) -> dict[str, Grid]:
    """The grid of each activation `qgraph` holds in int8 or int16, names in `int16` moved
    from their int8 grid to its 16x8 twin."""
    grids: dict[str, Grid] = {}
    for name in (*graph.inputs, *(o for op in graph.ops for o in op.outputs)):
        q = qgraph.tensors.get(name)
        if q is None or q.dtype not in LEVELS or q.quant is None or q.data is not None:
            continue
        scale, zero = float(np.float32(q.quant.scale[0])), float(q.quant.zero_point[0])
        grid = (scale, zero, *LEVELS[q.dtype])
        grids[name] = int16_grid(scale, zero) if name in int16 and q.dtype == "int8" else grid
    return grids


def on_grid(value: Array, grid: Grid) -> Array:
    """`value` rounded to `grid` (see the module docstring)."""
    scale, zero, qmin, qmax = grid
    level = np.clip(round_half_away(value.astype(np.float64) / scale) + zero, qmin, qmax)
    out: Array = ((level - zero) * scale).astype(np.float32)
    return out


def simulate(
    graph: Graph,
    qgraph: Graph,
    inputs: Sequence[Any] | Array,
    weights: bool = True,
    activations: bool = True,
    int16: Collection[str] = (),
) -> list[Array]:
    """Float32 outputs (model layout) of `graph` for `inputs`, with `qgraph`'s int8 weights
    and/or its activation grids, the tensors in `int16` on their 16x8 grid (see the module
    docstring). `graph` is the float graph `qgraph` was quantized from:
    `float_rewrites(graph, calibration, config)`."""
    _check_pair(graph, qgraph)
    run = with_int8_weights(graph, qgraph) if weights else graph
    grids = activation_grids(graph, qgraph, int16) if activations else {}

    def to_grid(name: str, value: Array) -> Array:
        return on_grid(value, grids[name]) if name in grids else value

    values = evaluate(run, inputs, replace=to_grid)
    return [to_model_layout(run, n, values[n]) for n in run.outputs]
