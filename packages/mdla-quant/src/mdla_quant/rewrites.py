"""The float rewrites `quantize` rounds: each weight or bias several ops share copied per op,
then, with `equalize`, cross-layer equalization and high-bias absorption (`float_rewrites`).
`quantize` observes the absorption's minima in its own calibration pass (`equalized`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mdla_ir import Graph, OpKind
from mdla_quant.bias_absorption import Absorption, absorption
from mdla_quant.config import QuantConfig
from mdla_quant.equalize import equalize
from mdla_quant.unshare import own_weights

WEIGHTED = {  # the weighted ops by kind: their weight's output-channel axis
    OpKind.CONV_2D: 0,
    OpKind.DEPTHWISE_CONV_2D: 3,
    OpKind.FULLY_CONNECTED: 0,
    OpKind.TRANSPOSE_CONV_2D: 0,  # filter (O, KH, KW, I)
}


def float_rewrites(graph: Graph, calibration: Iterable[Any], config: QuantConfig) -> Graph:
    """The float graph `quantize` calibrates and rounds for `config`: `graph` itself, or with
    `equalize` its cross-layer equalized and high-bias absorbed twin (the same function in
    float). The int8 graph's weights and activations are roundings of this graph's, so it is
    what `simulate` compares them against. A weight or bias several ops share is first copied
    per op (`unshare.py`): its int8 form depends on the op that reads it."""
    graph, pending = equalized(graph, config)
    return graph if pending is None else pending.apply(calibration)[0]


def equalized(graph: Graph, config: QuantConfig) -> tuple[Graph, Absorption | None]:
    """`float_rewrites`' graph before high-bias absorption, and that absorption (None
    without `equalize`), whose minima calibration can observe."""
    graph = own_weights(graph, WEIGHTED)
    if not config.equalize:
        return graph, None
    graph, _ = equalize(graph)
    return graph, absorption(graph)
