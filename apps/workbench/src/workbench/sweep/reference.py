"""The FP32 outputs a task compares its configuration with, computed once per worker process:
every configuration of a sweep imports the same float graph and scores the same held-out
inputs, so after a worker's first task the float interpreter's run (most of the scoring's
CPU) is a lookup. The key is the graph's content (ops and every constant's bytes) and the
inputs' bytes: a spec whose build is not deterministic recomputes, never reuses.

    outputs = fp32_outputs(compiled.source.graph, inputs)     # one list per input
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

import mdla_ir
from mdla_ir import Graph

Array = np.ndarray[Any, Any]
_CACHE: dict[str, list[list[Array]]] = {}  # one entry: a worker scores one model


def _update(h: Any, array: Array) -> None:
    a = np.ascontiguousarray(array)
    h.update(f"{a.dtype}{a.shape}".encode())
    h.update(a.tobytes())


def digest(graph: Graph, inputs: Sequence[Sequence[Array]]) -> str:
    """sha256 of the graph's structure, its constants' bytes and the inputs' bytes."""
    h = hashlib.sha256()
    with np.printoptions(threshold=sys.maxsize):  # an array among the ops' attributes: whole
        h.update(repr((graph.ops, graph.inputs, graph.outputs, graph.layout)).encode())
    for name in sorted(graph.tensors):
        tensor = graph.tensors[name]
        h.update(repr((name, tensor.shape, tensor.dtype)).encode())
        if tensor.data is not None:
            _update(h, tensor.data)
    for xs in inputs:
        for x in xs:
            _update(h, x)
    return h.hexdigest()


def fp32_outputs(graph: Graph, inputs: Sequence[Sequence[Array]]) -> list[list[Array]]:
    """`mdla_ir.run_float(graph, xs)` for each input, from this process's cache when the same
    graph ran on the same inputs before."""
    key = digest(graph, inputs)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = [[np.asarray(o) for o in mdla_ir.run_float(graph, list(xs))] for xs in inputs]
    return _CACHE[key]
