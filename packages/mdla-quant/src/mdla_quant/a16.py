"""Int16 activations (TFLite's 16x8 scheme) chosen per tensor by `QuantConfig.a16`.

A tensor named in `a16` is int16, symmetric, zero point 0, at scale max(|lo|, |hi|) / 32767
from the same calibration range an int8 tensor would get; the weights stay int8 and the bias of
a conv or FC whose input is int16 is int64. An op runs 16x8 where its output is int16, so:

    x (int8) -> OP -> y (a16)     becomes   x -> QUANTIZE -> x/a16 (int16) -> OP -> y
    y (a16)  -> OP -> z (int8)    becomes   y -> QUANTIZE -> y/a8 (int8)   -> OP -> z

`requantize_boundaries` inserts those QUANTIZE ops in the float graph before calibration (the
float interpreter runs QUANTIZE as the identity), so each copy is observed, tied and scaled
like any activation. `check_a16` says first which name does not exist and which op has no 16x8
kernel yet (`kernels/a16_*.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind, QuantParams, Tensor
from mdla_quant.arith import round_half_away
from mdla_quant.errors import QuantError
from mdla_quant.floors import expand_tiny_range
from mdla_quant.kernels import A16_KERNELS
from mdla_quant.kernels.a16_common import FIXED_OUTPUT16 as FIXED16
from mdla_quant.observers import Histogram
from mdla_target.target import Target

# The ops that can run with an int16 output (every 16x8 kernel but the requantization itself).
A16_OPS: frozenset[OpKind] = frozenset(A16_KERNELS) - {OpKind.QUANTIZE}
INT16_MAX = 32767
# Ops kept int8 on purpose, with the reason the refusal gives. HARD_SWISH: a 16-bit form of our
# own would have no reference to be bit-exact with and could not be exported, and its input (a
# conv's output, typically) can still be int16, requantized to int8 in front of it.
NO_16X8 = {
    OpKind.HARD_SWISH: (
        "(LiteRT 2.3.0 refuses an int16 HARD_SWISH, 'Only float32, uint8 and int8 are "
        "supported', so nothing could check one and the .tflite export would not load)"
    )
}
# A 16x8 op's constant operands are int16, but for these (op, operand index): PRELU's alpha,
# which LiteRT's int16 PRELU reads as int8 codes (kernels/a16_ops.py).
INT8_OPERANDS: frozenset[tuple[OpKind, int]] = frozenset({(OpKind.PRELU, 1)})
FIXED_OUTPUT16 = {
    OpKind.LOGISTIC: FIXED16,
    OpKind.TANH: FIXED16,
    OpKind.SOFTMAX: FIXED16,
}


def check_a16(
    graph: Graph, names: tuple[str, ...], target: Target | None = None, device: str = ""
) -> None:
    """Each name is an op's output in `graph` (graph inputs stay int8, as the host quantizes
    them), every op writing one of them has a 16x8 kernel, and `target` gives `device` an int16
    form of each such op that the device maps (its entry's `int16`; an op the device does not
    map at all is placed elsewhere, and not judged here)."""
    made = {o: op for op in graph.ops for o in op.outputs}
    for name in names:
        if name not in made:
            known = ", ".join(sorted(made)[:6])
            where = "a graph input, which stays int8" if name in graph.inputs else "not"
            raise QuantError(
                f"a16 names `{name}`, {where} an op output of graph `{graph.name}`: "
                f"name op outputs (e.g. {known})"
            )
        op = made[name]
        if op.kind not in A16_OPS:
            why = NO_16X8.get(op.kind, "yet")
            raise QuantError(
                f"`{op.name}` ({op.kind.name}) has no int16 (16x8) kernel {why}, and a16 names "
                f"its output `{name}`: keep that tensor int8 (drop it from a16)"
            )
        if target is not None:
            _check_target(target, device, op, name)


def _check_target(target: Target, device: str, op: Op, name: str) -> None:
    spec = target.op(device, op.kind)
    if spec.supported and not spec.int16:
        raise QuantError(
            f"`{op.name}` ({op.kind.name}): target `{target.name}` gives {device} no int16 form "
            f"of {op.kind.name} (no `int16 = true` in its entry), and a16 names its output "
            f"`{name}`: keep that tensor int8"
        )


def requantize_boundaries(graph: Graph, names: tuple[str, ...]) -> tuple[Graph, frozenset[str]]:
    """`graph` with a QUANTIZE wherever an int16 tensor meets an int8 one (see the module
    docstring), and the names of every int16 tensor of the result."""
    wide = set(names)
    tensors, ops = dict(graph.tensors), []
    copies: dict[tuple[str, bool], str] = {}  # (tensor, to int16) -> its requantized copy

    def operand(name: str, out16: bool) -> str:
        if graph.tensors[name].is_const or (name in wide) == out16:
            return name
        if (name, out16) not in copies:
            new = f"{name}/a16" if out16 else f"{name}/a8"
            tensors[new] = Tensor(new, tensors[name].shape, tensors[name].dtype)
            ops.append(Op(OpKind.QUANTIZE, f"{new}/quantize", (name,), (new,)))
            copies[name, out16] = new
        return copies[name, out16]

    for op in graph.ops:
        out16 = op.outputs[0] in names
        ops.append(op.with_(inputs=tuple(operand(n, out16) for n in op.inputs)))
    wide.update(new for (_, to16), new in copies.items() if to16)
    if not copies:
        return graph, frozenset(wide)
    return graph.with_(tensors=tensors, ops=tuple(ops)), frozenset(wide)


def place_requantizations(graph: Graph, target: Target, device: str) -> Graph:
    """`graph` (from `requantize_boundaries`) with its int8 <-> int16 QUANTIZE ops placed on the
    host CPU (`provenance.cpu_ops`) where `target` does not map that form on `device`: they are
    the quantizer's own, and the CPU runs them (the emulator's 16x8 QUANTIZE kernel)."""
    if target.op(device, OpKind.QUANTIZE).maps(wide=True):
        return graph
    return requantizations_on_cpu(graph)


def requantizations_on_cpu(graph: Graph) -> Graph:
    """`graph` with every QUANTIZE (a16's int8 <-> int16 requantizations) placed on the host
    CPU (`provenance.cpu_ops`): `--cpu QUANTIZE`, or a target that does not map them."""
    mine = tuple(op.name for op in graph.ops if op.kind is OpKind.QUANTIZE)
    if not mine:
        return graph
    cpu = set(graph.provenance.cpu_ops) | set(mine)
    placed = tuple(op.name for op in graph.ops if op.name in cpu)
    return graph.with_(provenance=dataclasses.replace(graph.provenance, cpu_ops=placed))


def int16_params(lo: float, hi: float) -> QuantParams:
    """Symmetric int16: scale = max(|lo|, |hi|) / 32767 as float32, zero point 0 (a range
    narrower than 1e-6 widened as for int8, `floors.expand_tiny_range`; an empty one gets
    scale 1/32767)."""
    lo, hi = expand_tiny_range(min(float(lo), 0.0), max(float(hi), 0.0))
    amax = max(-lo, hi) or 1.0
    return QuantParams((float(np.float32(amax / INT16_MAX)),), (0,))


def int16_quant(
    names: Sequence[str],
    wide: frozenset[str],
    hists: Mapping[str, Histogram],
    root: Callable[[str], str],
) -> dict[str, QuantParams]:
    """The params of the int16 tensors among `names`: each takes its tie group's (`root`)
    observed range, unclipped, since 65536 levels leave no rounding error worth trading for
    clipping error (TFLite's 16x8 converter takes min/max too)."""
    full: dict[str, tuple[float, float]] = {}
    for name in names:
        h = hists[name]
        old = full.get(root(name), (h.lo, h.hi))
        full[root(name)] = (min(old[0], h.lo), max(old[1], h.hi))
    return {n: int16_params(*full[root(n)]) for n in wide}


def fixed_output(op: Op, int8: tuple[float, int], wide: frozenset[str]) -> tuple[float, int]:
    """The (scale, zero point) a fixed-output op's output takes: the target's int8 params, or
    the 16x8 kernel's where that output is int16 (LOGISTIC, TANH, SOFTMAX: 1/32768, 0)."""
    if op.outputs[0] in wide and op.kind in FIXED_OUTPUT16:
        return FIXED_OUTPUT16[op.kind]
    return int8


def is_wide(op: Op, tensors: Mapping[str, Tensor]) -> bool:
    """The op runs 16x8: its output is int16 in `tensors`."""
    out = tensors.get(op.outputs[0])
    return out is not None and out.dtype == "int16"


def const16(name: str, data: np.ndarray[Any, Any]) -> Tensor:
    """A constant operand of a 16x8 op (ADD's, MUL's): symmetric int16 over its range."""
    params = int16_params(float(data.min(initial=0.0)), float(data.max(initial=0.0)))
    q = np.clip(round_half_away(data / np.float32(params.scale[0])), -32768, 32767)
    return Tensor(name, tuple(data.shape), "int16", data=q.astype(np.int16), quant=params)
