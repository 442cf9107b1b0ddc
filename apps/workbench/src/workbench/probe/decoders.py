"""Probes of the ops issue 15 added on an assumption (never measured on the MDLA by the seed):
PRELU (PReLU, LeakyReLU), DEPTH_TO_SPACE (PixelShuffle), TRANSPOSE_CONV_2D (ConvTranspose2d,
per-tensor and per-channel weights), RESIZE_NEAREST_NEIGHBOR (and whether both resizes keep the
input's scale). `workbench probe` measures them; the target file then
says so."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from mdla_ir.builders import act, const, qp, random_int8, single_op_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from workbench.probe.model import Probe, ProbeModel

SHAPE = (1, 4, 4, 8)


def prelu(per_channel: bool) -> Graph:
    """PRELU with one alpha per channel (PReLU) or one for all (LeakyReLU's form)."""
    a_shape = (SHAPE[3],) if per_channel else (1,)
    alpha = np.linspace(-100, 120, int(np.prod(a_shape))).astype(np.int8).reshape(a_shape)
    ins = [act("x", SHAPE, qp(0.05, -7)), const("alpha", alpha, qp(0.002, -3))]
    return single_op_qgraph(OpKind.PRELU, ins, SHAPE, qp(0.04, 5))


def resize(kind: OpKind, rescale: bool = False) -> Graph:
    """A 2x upsample (torch 'nearest' / bilinear align_corners=False), same or rescaled output."""
    q = qp(0.05, -7)
    half = kind is OpKind.RESIZE_BILINEAR
    attrs = {"size": (8, 8), "align_corners": False, "half_pixel_centers": half}
    out_q = qp(0.07, 3) if rescale else q
    return single_op_qgraph(kind, [act("x", SHAPE, q)], (1, 8, 8, 8), out_q, attrs)


def depth_to_space(rescale: bool = False) -> Graph:
    """Block 2: (1, 4, 4, 8) -> (1, 8, 8, 2), same or rescaled output."""
    q = qp(0.05, -7)
    out_q = qp(0.07, 3) if rescale else q
    attrs = {"block_size": 2}
    return single_op_qgraph(OpKind.DEPTH_TO_SPACE, [act("x", SHAPE, q)], (1, 8, 8, 2), out_q, attrs)


def transpose_conv(per_channel: bool) -> Graph:
    """k3 s2 with torch's padding=1, output_padding=1 crop (t, b, l, r) = (1, 0, 1, 0): 4x4 ->
    8x8, 8 -> 6 channels."""
    rng = np.random.default_rng(91)
    co = 6
    scales = np.linspace(0.004, 0.02, co if per_channel else 1).astype(np.float32)
    w_q = qp(scales, 0, 0 if per_channel else None)
    w = const("w", random_int8(rng, (co, 3, 3, SHAPE[3]), lo=-127), w_q)
    bias_q = qp(np.float32(0.05) * np.broadcast_to(scales, (co,)), 0, 0)
    bias = const("bias", rng.integers(-500, 500, co).astype(np.int32), bias_q)
    attrs = {"stride": (2, 2), "padding": (1, 0, 1, 0), "fuse": "NONE"}
    ins = [act("x", SHAPE, qp(0.05, -7)), w, bias]
    return single_op_qgraph(OpKind.TRANSPOSE_CONV_2D, ins, (1, 8, 8, co), qp(0.3, 2), attrs)


def _plain(build: Callable[[], Graph], exact: bool) -> ProbeModel:
    return ProbeModel(build(), references=None if exact else {})


def _p(op: str, variant: str, role: str, build: Callable[[], Graph], exact: bool) -> Probe:
    return Probe(op, variant, role, partial(_plain, build, exact), "assumed in the target file")


def decoder_probes(references: frozenset[OpKind]) -> list[Probe]:
    """`references`: the kinds with an int8 reference kernel (bit-exactness is checked there)."""
    ex = OpKind.PRELU in references
    near, bil = OpKind.RESIZE_NEAREST_NEIGHBOR, OpKind.RESIZE_BILINEAR
    d2s, tconv = OpKind.DEPTH_TO_SPACE, OpKind.TRANSPOSE_CONV_2D
    tc_ex = tconv in references
    return [
        _p("PRELU", "one alpha (LeakyReLU)", "base", partial(prelu, False), ex),
        _p("PRELU", "alpha per channel", "broadcast", partial(prelu, True), ex),
        _p(near.name, "int8 2x", "base", partial(resize, near), near in references),
        _p(near.name, "rescaled output", "rescale", partial(resize, near, True), False),
        _p(bil.name, "rescaled output", "rescale", partial(resize, bil, True), False),
        _p("DEPTH_TO_SPACE", "block 2", "base", depth_to_space, d2s in references),
        _p(tconv.name, "k3 s2 per-tensor w", "base", partial(transpose_conv, False), tc_ex),
        _p(tconv.name, "k3 s2 per-channel w", "per_channel", partial(transpose_conv, True), tc_ex),
        _p("DEPTH_TO_SPACE", "rescaled output", "rescale", partial(depth_to_space, True), False),
    ]
