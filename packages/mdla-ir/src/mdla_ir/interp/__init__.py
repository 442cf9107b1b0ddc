"""The float32 reference interpreter.

`run_float(graph, inputs)` takes and returns arrays in the model's own layout (the graph's
`boundary` permutations are applied at the edges), in graph input/output order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mdla_ir.errors import IRError
from mdla_ir.graph import Graph
from mdla_ir.interp import (  # noqa: F401  (register kernels)
    conv,
    elementwise,
    functions,
    pool,
    recurrent,
    reduction,
    resample,
)
from mdla_ir.interp.registry import KERNELS, Array, Kernel
from mdla_ir.ops import OpKind


def _as_list(inputs: Sequence[Any] | Array) -> list[Array]:
    if isinstance(inputs, np.ndarray):
        return [inputs]
    return [np.asarray(x) for x in inputs]


def bind_inputs(graph: Graph, inputs: Sequence[Any] | Array) -> dict[str, Array]:
    """Check the model-layout inputs against the graph and permute them into its layout."""
    arrays = _as_list(inputs)
    if len(arrays) != len(graph.inputs):
        raise IRError(
            f"graph `{graph.name}` takes {len(graph.inputs)} input(s) "
            f"{list(graph.inputs)}, got {len(arrays)}"
        )
    env: dict[str, Array] = {}
    for name, x in zip(graph.inputs, arrays, strict=True):
        want = graph.model_shape(name)
        if tuple(x.shape) != want:
            raise IRError(
                f"input `{name}` of graph `{graph.name}`: expected shape {want} "
                f"(model layout), got {tuple(x.shape)}"
            )
        x = x.astype(np.float32, copy=False)
        perm = graph.boundary.get(name)
        shape = graph.tensors[name].shape  # (a longer perm squeezes leading unit dims)
        env[name] = np.ascontiguousarray(x.transpose(perm)).reshape(shape) if perm else x
    return env


def to_model_layout(graph: Graph, name: str, value: Array) -> Array:
    perm = graph.boundary.get(name)
    if not perm:
        return value
    value = value.reshape((1,) * (len(perm) - value.ndim) + value.shape)
    return np.ascontiguousarray(value.transpose(np.argsort(perm)))


def evaluate(
    graph: Graph,
    inputs: Sequence[Any] | Array,
    keep: Iterable[str] | None = None,
    observe: Callable[[str, Array], None] | None = None,
    replace: Callable[[str, Array], Array] | None = None,
    kernels: Mapping[OpKind, Kernel] | None = None,
) -> dict[str, Array]:
    """Run the graph; return the graph-layout values of `keep` (default: the outputs).

    Values are freed as soon as their last consumer has run, so memory stays at the live set;
    `observe(name, value)` sees every graph input and op output as it is computed (calibration
    statistics stream through it without keeping activations). `replace(name, value)`, if
    given, returns what is stored instead of each graph input and op output, before `observe`
    and every consumer see it (`mdla_quant.simulate` rounds activations to their int8 grid
    through it). `kernels` maps op kinds to kernels used instead of the interpreter's own
    (faster ones that give the same values: `mdla_quant.fast_kernels`).
    """
    wanted = set(graph.outputs if keep is None else keep)
    env = bind_inputs(graph, inputs)
    if replace is not None:
        env = {name: replace(name, value) for name, value in env.items()}
    last_use: dict[str, int] = {}
    for i, op in enumerate(graph.ops):
        for name in op.inputs:
            last_use[name] = i
    kept: dict[str, Array] = {n: env[n] for n in graph.inputs if n in wanted}
    if observe is not None:
        for name in graph.inputs:
            observe(name, env[name])
    for i, op in enumerate(graph.ops):
        fn = (kernels or {}).get(op.kind) or KERNELS.get(op.kind)
        if fn is None:
            raise IRError(f"op `{op.name}`: the float interpreter has no kernel for {op.kind.name}")
        args = [env[n] if n in env else graph.const(n) for n in op.inputs]
        try:
            results = fn(op, args, graph.layout)
        except (ValueError, IndexError, KeyError) as exc:
            raise IRError(
                f"op #{i} `{op.name}` ({op.kind.name}) failed in the float interpreter: {exc}"
            ) from exc
        for name, value in zip(op.outputs, results, strict=True):
            if replace is not None:
                value = replace(name, value)
            env[name] = value
            if observe is not None:
                observe(name, value)
            if name in wanted:
                kept[name] = value
        for name in op.inputs:
            if last_use.get(name) == i and name in env and name not in wanted:
                del env[name]
    return kept


def run_float(graph: Graph, inputs: Sequence[Any] | Array) -> list[Array]:
    """Float32 outputs of `graph` for `inputs`, both in the model's own layout."""
    values = evaluate(graph, inputs)
    return [to_model_layout(graph, n, values[n]) for n in graph.outputs]
