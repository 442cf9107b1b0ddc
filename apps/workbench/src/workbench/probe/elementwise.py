"""Probe models of the elementwise, activation, movement and math ops, with the variants that
decide `broadcast`, `shared_scale`, `keeps_input_scale` and `fixed_output` of a target entry,
and the ABI operations outside `mdla_ir.OpKind` (POW, MAXIMUM, ...) written by recoding a
saved model's operation (`patch.recode`). LOG, QUANTIZE and DEQUANTIZE cannot be written.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from mdla_ir.builders import act, qp, single_op_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_runtime.format.container import NOT_AVAILABLE
from workbench.probe.model import NotExpressibleError, Probe, ProbeModel
from workbench.probe.patch import recode

SHAPE = (1, 4, 4, 8)
FIXED = {  # the ABI's fixed int8 output of these ops (reference §4): scale, zero point
    OpKind.LOGISTIC: (1 / 256, -128),
    OpKind.TANH: (1 / 128, 0),
    OpKind.SOFTMAX: (1 / 256, -128),
}
FREE = {
    OpKind.LOGISTIC: (1 / 200, -100),
    OpKind.TANH: (1 / 100, 0),
    OpKind.SOFTMAX: (1 / 200, -128),
}
UNARY_IN = {  # input (scale, zp) that spans each op's interesting range
    OpKind.RELU: (0.05, 0),
    OpKind.RELU6: (0.05, 0),
    OpKind.HARD_SWISH: (0.04, 0),
    OpKind.LOGISTIC: (0.06, 0),
    OpKind.TANH: (0.03, 0),
    OpKind.SOFTMAX: (0.05, 0),
    OpKind.SQRT: (0.04, -128),
    OpKind.RSQRT: (0.04, -128),
    OpKind.EXP: (0.02, 0),
    OpKind.LOG: (0.04, -128),
}
UNARY_OUT = {
    OpKind.RELU: (0.03, -128),
    OpKind.RELU6: (6 / 255, -128),
    OpKind.HARD_SWISH: (0.025, -110),
    OpKind.SQRT: (0.0125, -128),
    OpKind.RSQRT: (0.02, -128),
    OpKind.EXP: (0.05, -128),
    OpKind.LOG: (0.02, 60),
}


def unary(kind: OpKind, free: bool = False) -> Graph:
    if kind.value in NOT_AVAILABLE:
        raise NotExpressibleError(
            f"operation {kind.value} ({kind.name}) is marked not available in the Neuron "
            "Adapter (ABI §3c), so the .mdla readers refuse it"
        )
    s_in, z_in = UNARY_IN[kind]
    s_out, z_out = (FREE if free else FIXED).get(kind) or UNARY_OUT[kind]
    attrs: dict[str, Any] = {"beta": 1.0, "axis": -1} if kind is OpKind.SOFTMAX else {}
    return single_op_qgraph(kind, [act("x", SHAPE, qp(s_in, z_in))], SHAPE, qp(s_out, z_out), attrs)


def binary(kind: OpKind, broadcast: bool = False) -> Graph:
    qa, qb = qp(0.04, -5), qp(0.03, 9)
    s = qa.scale[0] * qb.scale[0] * 128 * 128 / 60 if kind is OpKind.MUL else 0.08
    if kind is OpKind.DIV:
        qb = qp(0.03, -128)  # divisors >= 0
    b_shape = (1, 1, 1, SHAPE[3]) if broadcast else SHAPE
    ins = [act("x", SHAPE, qa), act("y", b_shape, qb)]
    return single_op_qgraph(kind, ins, SHAPE, qp(s, 3), {"fuse": "NONE"})


def movement(kind: OpKind, rescale: bool = False, unequal: bool = False) -> Graph:
    q = qp(0.05, -7)
    out_q = qp(0.07, 3) if rescale else q
    x = act("x", SHAPE, q)
    if kind is OpKind.CONCATENATION:
        y = act("y", (1, 4, 4, 5), qp(0.09, 11) if unequal else q)
        return single_op_qgraph(kind, [x, y], (1, 4, 4, 13), q, {"axis": 3})
    if kind is OpKind.PAD:
        pads = ((0, 0), (1, 1), (2, 0), (0, 0))
        return single_op_qgraph(kind, [x], (1, 6, 6, 8), out_q, {"pads": pads})
    if kind is OpKind.RESHAPE:
        return single_op_qgraph(kind, [x], (1, 16, 8), out_q, {"shape": (1, 16, 8)})
    if kind is OpKind.TRANSPOSE:
        return single_op_qgraph(kind, [x], (1, 4, 4, 8), out_q, {"perm": (0, 2, 1, 3)})
    if kind is OpKind.MEAN:
        attrs = {"axes": (1, 2), "keepdims": True}
        return single_op_qgraph(kind, [x], (1, 1, 1, 8), qp(0.03, -2), attrs)
    if kind is OpKind.RESIZE_BILINEAR:
        attrs = {"size": (8, 8), "align_corners": False, "half_pixel_centers": False}
        return single_op_qgraph(kind, [x], (1, 8, 8, 8), q, attrs)
    if kind is OpKind.BATCH_MATMUL:
        ins = [act("x", (1, 4, 8), q), act("y", (1, 8, 6), qp(0.04, 2))]
        return single_op_qgraph(kind, ins, (1, 4, 6), qp(0.3, 0), {})
    raise ValueError(f"no movement probe for {kind.name}")


def _plain(build: Callable[[], Graph], exact: bool) -> ProbeModel:
    return ProbeModel(build(), references=None if exact else {})


def _recoded(
    build: Callable[[], Graph], code: int, keep: int, extra: tuple[int, ...]
) -> ProbeModel:
    return ProbeModel(build(), recode(code, keep, extra), references={})


def _missing(why: str) -> ProbeModel:
    raise NotExpressibleError(why)


def _p(op: str, variant: str, role: str, build: Callable[[], Graph], exact: bool = True) -> Probe:
    return Probe(op, variant, role, partial(_plain, build, exact))


def elementwise_probes(references: frozenset[OpKind]) -> list[Probe]:
    """`references`: the kinds with an int8 reference kernel (bit-exactness is checked there)."""
    probes: list[Probe] = []
    for kind in (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.DIV):
        ex = kind in references
        probes += [
            _p(kind.name, "same shape", "base", partial(binary, kind), ex),
            _p(kind.name, "broadcast", "broadcast", partial(binary, kind, True), ex),
        ]
    for kind in (OpKind.RELU, OpKind.RELU6, OpKind.HARD_SWISH):
        probes.append(_p(kind.name, "int8", "base", partial(unary, kind), kind in references))
    for kind in (OpKind.LOGISTIC, OpKind.TANH, OpKind.SOFTMAX):
        s, z = FIXED[kind]
        ex = kind in references
        probes += [
            _p(kind.name, f"out {s:g},{z}", "base", partial(unary, kind), ex),
            _p(kind.name, "free out scale", "free_output", partial(unary, kind, True), False),
        ]
    for kind in (OpKind.CONCATENATION, OpKind.PAD, OpKind.RESHAPE, OpKind.TRANSPOSE):
        probes.append(
            _p(kind.name, "same scale", "base", partial(movement, kind), kind in references)
        )
        concat = kind is OpKind.CONCATENATION
        variant, role = (
            ("unequal scales", "unequal_scales") if concat else ("rescaled output", "rescale")
        )
        build = (
            partial(movement, kind, unequal=True)
            if concat
            else partial(movement, kind, rescale=True)
        )
        probes.append(_p(kind.name, variant, role, build, False))  # the reference refuses these
    for kind in (OpKind.MEAN, OpKind.RESIZE_BILINEAR, OpKind.BATCH_MATMUL):
        probes.append(_p(kind.name, "int8", "base", partial(movement, kind), kind in references))
    for kind in (OpKind.SQRT, OpKind.RSQRT, OpKind.EXP, OpKind.LOG):
        model = partial(_plain, partial(unary, kind), kind in references)
        probes.append(Probe(kind.name, "int8", "base", model, "math primitive (the rsqrt wall)"))
    add, relu = partial(binary, OpKind.ADD), partial(unary, OpKind.RELU)
    probes += [
        Probe("POW", "int8", "base", partial(_recoded, add, 70, 2, ()), "math primitive"),
        Probe("MAXIMUM", "int8", "base", partial(_recoded, add, 65, 2, ())),
        Probe("MINIMUM", "int8", "base", partial(_recoded, add, 66, 2, ())),
        Probe("RELU1", "int8", "base", partial(_recoded, relu, 20, 1, ())),
        Probe("CHANNEL_SHUFFLE", "2 groups", "base", partial(_recoded, relu, 46, 1, (2, 3))),
    ]
    why = "needs float32 operands at the model boundary; the manifest's I/O is int8 only"
    probes += [
        Probe(k, "float boundary", "base", partial(_missing, f"{k} {why}"))
        for k in ("QUANTIZE", "DEQUANTIZE")
    ]
    return probes
