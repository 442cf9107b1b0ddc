"""Int16 activations (TFLite's 16x8 scheme) chosen per tensor by `QuantConfig.a16`.

A tensor named in `a16` is int16, symmetric, zero point 0, at scale max(|lo|, |hi|) / 32767
from the same calibration range an int8 tensor would get; the weights stay int8 and the bias of
a conv or FC whose input is int16 is int64. `check_a16` says, before any work, which named
tensor does not exist and which op cannot take an int16 operand yet.
"""

from __future__ import annotations

from mdla_ir import Graph, OpKind
from mdla_quant.errors import QuantError

# The ops whose int8 kernel has a 16x8 twin in kernels/ (and in TFLite's reference kernels).
A16_OPS: frozenset[OpKind] = frozenset()


def check_a16(graph: Graph, names: tuple[str, ...]) -> None:
    """Each name is an activation of `graph` (an input or an op's output), and every op that
    reads or writes one of them has a 16x8 kernel."""
    acts = {*graph.inputs, *(o for op in graph.ops for o in op.outputs)}
    for name in names:
        if name not in acts:
            known = ", ".join(sorted(acts)[:6])
            raise QuantError(
                f"a16 names `{name}`, which is not an activation of graph `{graph.name}`: "
                f"name op outputs or graph inputs (e.g. {known})"
            )
    wanted = set(names)
    for op in graph.ops:
        touched = wanted.intersection([*op.inputs, *op.outputs])
        if touched and op.kind not in A16_OPS:
            raise QuantError(
                f"`{op.name}` ({op.kind.name}) has no int16 (16x8) kernel yet, and a16 names its "
                f"tensor `{sorted(touched)[0]}`: keep that tensor int8 (drop it from a16)"
            )
