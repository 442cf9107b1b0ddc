"""`run_int8`: run a quantized graph through the int8 reference kernels, op by op.

Float inputs in the model's layout are permuted into the graph's (as `mdla_ir.run_float` does)
and quantized as TFLite's QUANTIZE does, q = clamp(roundf(x / s) + z); outputs are dequantized,
real = s * (q - z), and permuted back (or returned raw: int8, graph layout). A float32 region
of a CPU partition (DEQUANTIZE, GRU, FULLY_CONNECTED_F32: ops whose output tensor is float32
with no quantization) runs its float32 definition (`kernels/gru.py`), and a float32 output is
returned as computed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from types import EllipsisType
from typing import Any

import numpy as np

from mdla_ir.affine import quantize_input
from mdla_ir.devices import DEFAULT_TARGET
from mdla_ir.graph import Graph, QuantParams
from mdla_ir.interp import bind_inputs, to_model_layout
from mdla_ir.provenance import Accumulator, Numerics
from mdla_quant.arith import Array, check_accumulator, check_rounding
from mdla_quant.errors import KernelError, QuantError
from mdla_quant.kernels import A16_KERNELS, INT8_KERNELS, Kernel
from mdla_quant.kernels.gru import FLOAT32_KERNELS
from mdla_quant.kernels.pairs import pair_lookup, unary_partner, unread_unaries
from mdla_target import load_target


def _io_params(
    graph: Graph, name: str, dtypes: tuple[str, ...] = ("int8",)
) -> tuple[np.float32, int]:
    q = graph.tensors[name].quant
    if graph.tensors[name].dtype not in dtypes or q is None or len(q.scale) != 1:
        raise QuantError(
            f"graph `{graph.name}`: boundary tensor `{name}` is not per-tensor "
            f"int8 (dtype {graph.tensors[name].dtype}, quant {q})"
        )
    return np.float32(q.scale[0]), int(q.zero_point[0])


def _operand(graph: Graph, env: dict[str, Array], name: str) -> Array:
    if name in env:
        return env[name]
    tensor = graph.tensors.get(name)
    if tensor is None or tensor.data is None:
        raise QuantError(f"graph `{graph.name}`: tensor `{name}` is used before it is computed")
    return np.asarray(tensor.data)


Observer = Callable[[str, Array], None]


@cache
def _target_accumulator(target: str) -> Accumulator:
    return Accumulator(load_target(target).accumulator)


def graph_numerics(qgraph: Graph) -> Numerics:
    """The arithmetic `qgraph` was quantized for: its provenance's `numerics`; for a graph
    that does not record them (quantized before the record existed, or read back from a
    manifest, which stores the rounding only) the recorded rounding and the `[arith]
    accumulator` fact of its target (QuantConfig's, else legalize's, else the default)."""
    prov = qgraph.provenance
    if prov.numerics is not None and prov.numerics.accumulator is not None:
        return prov.numerics
    target = (prov.quant.target if prov.quant is not None else "") or prov.target
    target = target or DEFAULT_TARGET
    return Numerics(prov.rounding, _target_accumulator(target), target)


def graph_accumulator(qgraph: Graph) -> Accumulator:
    """The accumulator fact `qgraph` was quantized for (`graph_numerics`)."""
    numerics = graph_numerics(qgraph)
    return numerics.accumulator or _target_accumulator(numerics.target or DEFAULT_TARGET)


def run_int8(
    qgraph: Graph,
    inputs: Sequence[Any] | Array,
    raw: bool = False,
    rounding: str | None = None,
    observe: Observer | None = None,
    accumulator: str | None = None,
) -> list[Array]:
    """Outputs of the int8 graph `qgraph` for real-valued `inputs` (model layout).

    Returns dequantized float32 outputs in the model's layout, or with `raw=True` the int8
    outputs in the graph's layout. `rounding` ("double" or "single") and `accumulator`
    ("saturate" or "wrap") override the graph's numerics record (`graph_numerics`: what
    quantize recorded). `observe(name, q)`, if given, sees every int8 activation (graph inputs,
    then each op's output) in graph layout as soon as it is computed; without it, an op whose
    output nothing reads is skipped (`pairs.unread_unaries`).
    """
    numerics = graph_numerics(qgraph)
    mode = check_rounding(rounding or numerics.rounding)
    acc_mode = check_accumulator(accumulator or graph_accumulator(qgraph))
    if qgraph.layout != "NHWC":
        raise QuantError(f"graph `{qgraph.name}` has layout {qgraph.layout}; int8 graphs are NHWC")
    env = quantize_inputs(qgraph, inputs)
    if observe is not None:
        for name, value in env.items():
            observe(name, value)
    last_use = {n: i for i, op in enumerate(qgraph.ops) for n in op.inputs}
    keep = set(qgraph.outputs)
    partners = [unary_partner(qgraph, i) for i in range(len(qgraph.ops))]  # once per run
    skip = unread_unaries(qgraph, lambda _, i: partners[i]) if observe is None else frozenset()
    for i, op in enumerate(qgraph.ops):
        if i in skip:
            continue
        value = run_op(qgraph, i, env, mode, acc_mode, partners[i])
        env[op.outputs[0]] = value
        if observe is not None:
            observe(op.outputs[0], value)
        for name in op.inputs:
            if last_use.get(name) == i and name in env and name not in keep:
                del env[name]
    if raw:
        return [env[n] for n in qgraph.outputs]
    results = []
    for name in qgraph.outputs:
        if _is_float32(qgraph, name):
            results.append(to_model_layout(qgraph, name, env[name]))
            continue
        scale, zp = _io_params(qgraph, name, ("int8", "int16"))  # an a16 output dequantizes
        real = (scale * (env[name].astype(np.float32) - np.float32(zp))).astype(np.float32)
        results.append(to_model_layout(qgraph, name, real))
    return results


def quantize_inputs(qgraph: Graph, inputs: Sequence[Any] | Array) -> dict[str, Array]:
    """The int8 graph-layout values of model-layout float `inputs` (TFLite's QUANTIZE)."""
    env = {}
    for name, x in bind_inputs(qgraph, inputs).items():
        if not np.all(np.isfinite(x)):
            raise QuantError(f"graph `{qgraph.name}`: input `{name}` holds NaN or inf values")
        env[name] = quantize_input(x, *_io_params(qgraph, name))
    return env


def _is_float32(qgraph: Graph, name: str) -> bool:
    """A float32 activation: made by a float region of a CPU partition (no quantization)."""
    t = qgraph.tensors[name]
    return t.dtype == "float32" and t.quant is None and t.data is None


def _run_float32(qgraph: Graph, i: int, env: dict[str, Array]) -> Array:
    op = qgraph.ops[i]
    fn = FLOAT32_KERNELS.get(op.kind)
    if fn is None:
        raise KernelError(
            f"op `{op.name}`: no float32 kernel for {op.kind.name} (its output "
            f"`{op.outputs[0]}` is float32)",
            op.name,
        )
    args = [_operand(qgraph, env, n) for n in op.inputs]
    try:
        value = fn(op, args, [qgraph.tensors[n].quant for n in op.inputs])
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise KernelError(
            f"op #{i} `{op.name}` ({op.kind.name}) failed in the float32 reference: {exc}",
            op.name,
        ) from exc
    return value


def _is_16x8(qgraph: Graph, i: int) -> bool:
    """Op #i runs its 16x8 kernel: its output, or an activation operand, is int16."""
    op = qgraph.ops[i]
    names = [*op.outputs, *(n for n in op.inputs if qgraph.tensors[n].data is None)]
    return any(qgraph.tensors[n].dtype == "int16" for n in names)


def _kernel(qgraph: Graph, i: int) -> Kernel:
    op = qgraph.ops[i]
    wide = _is_16x8(qgraph, i)
    fn = (A16_KERNELS if wide else INT8_KERNELS).get(op.kind)
    if fn is None:
        form = "16x8 (int16 activations)" if wide else "int8"
        raise KernelError(f"op `{op.name}`: no {form} kernel for {op.kind.name}", op.name)
    return fn


def run_op(
    qgraph: Graph,
    i: int,
    env: dict[str, Array],
    mode: str,
    accumulator: str = "saturate",
    pair: tuple[int, int] | EllipsisType | None = ...,
) -> Array:
    """The int8 output of op #i of `qgraph`, its activation inputs taken from `env` (float32
    for an op of a float region: `kernels/gru.py`). `pair`: `unary_partner(qgraph, i)` where
    the caller has it (found here otherwise)."""
    op = qgraph.ops[i]
    if len(op.outputs) == 1 and _is_float32(qgraph, op.outputs[0]):
        return _run_float32(qgraph, i, env)
    fn = _kernel(qgraph, i)
    if len(op.outputs) != 1:
        raise KernelError(
            f"op `{op.name}` ({op.kind.name}): int8 kernels have one output, got {len(op.outputs)}",
            op.name,
        )
    out = qgraph.tensors[op.outputs[0]]
    if out.quant is None:
        raise KernelError(
            f"op `{op.name}` ({op.kind.name}): output `{out.name}` has no quantization parameters",
            op.name,
        )
    if pair is ...:
        pair = unary_partner(qgraph, i)  # bin(a, un(a)): one table of a (kernels/pairs.py)
    names = op.inputs if pair is None else op.inputs[pair[1] : pair[1] + 1]  # b is not read
    args = [_operand(qgraph, env, n) for n in names]
    try:
        if pair is None:
            arg_q: list[QuantParams | None] = [qgraph.tensors[n].quant for n in op.inputs]
            value = fn(op, args, arg_q, out.quant, mode, accumulator)
        else:
            value = pair_lookup(qgraph, i, pair, args[0], mode, accumulator)
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise KernelError(
            f"op #{i} `{op.name}` ({op.kind.name}) failed in the int8 reference: {exc}", op.name
        ) from exc
    if value.shape != tuple(out.shape):
        raise KernelError(
            f"op `{op.name}` ({op.kind.name}): computed shape {value.shape}, "
            f"graph says {tuple(out.shape)}",
            op.name,
        )
    return value
