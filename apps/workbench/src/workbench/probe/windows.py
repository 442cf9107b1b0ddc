"""Probe models of the window and weight ops: CONV_2D, DEPTHWISE_CONV_2D, the pools and
FULLY_CONNECTED, with the variants that decide a target's `per_channel` and `padding`.

Shapes are small but not degenerate: an 8×8 input with a 3×3, stride-2 window is where TF SAME
(pads 0 before, 1 after) and PyTorch's symmetric padding (1, 1) give different outputs.
"""

from __future__ import annotations

import zlib
from functools import partial

import numpy as np

from mdla_ir.builders import act, const, out_size, qp, random_int8, single_op_qgraph
from mdla_ir.graph import Graph, QuantParams
from mdla_ir.ops import OpKind
from workbench.probe.model import Probe, ProbeModel
from workbench.probe.patch import implicit

Pads = tuple[int, int, int, int]  # top, bottom, left, right (the qgraph's order)
VALID: Pads = (0, 0, 0, 0)
TF_SAME: Pads = (0, 1, 0, 1)  # 8×8, k3, s2: total 1, TF puts it after
SYMMETRIC: Pads = (1, 1, 1, 1)  # PyTorch padding=1
EXTRA_BEFORE: Pads = (1, 0, 1, 0)


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _out_q(rng: np.random.Generator, s_in: float, s_w: float, taps: int) -> QuantParams:
    """An output scale that spreads the accumulator (std ≈ √taps·74·74·s_in·s_w) over int8."""
    std = float(np.sqrt(taps)) * 74.0 * 74.0 * s_in * s_w
    return qp(std / 40.0, int(rng.integers(-20, 20)))


def conv(
    kind: OpKind, per_channel: bool, stride: int, pads: Pads, tag: str, dilation: int = 1
) -> Graph:
    rng = rng_for(f"{kind.name}/{tag}")
    h = w = 8
    c, k = 4, 3
    depthwise = kind is OpKind.DEPTHWISE_CONV_2D
    o = c if depthwise else 6
    in_q = qp(0.05, -7)
    n_scales = o if per_channel else 1
    scales = np.exp(rng.uniform(np.log(0.004), np.log(0.02), size=n_scales)).astype(np.float32)
    dim = 3 if depthwise else 0
    shape = (1, k, k, o) if depthwise else (o, k, k, c)
    weights = const(
        "w", random_int8(rng, shape, lo=-127), qp(scales, 0, dim if per_channel else None)
    )
    b_scales = np.float32(in_q.scale[0]) * np.broadcast_to(scales, (o,))
    bias = const("bias", rng.integers(-2000, 2000, size=o).astype(np.int32), qp(b_scales, 0, 0))
    oh = out_size(h, k, stride, dilation, pads[0], pads[1])
    ow = out_size(w, k, stride, dilation, pads[2], pads[3])
    attrs: dict[str, object] = {"stride": (stride, stride), "padding": pads}
    attrs |= {"dilation": (dilation, dilation)}
    attrs |= {"fuse": "NONE", "multiplier": 1} if depthwise else {"fuse": "NONE", "groups": 1}
    taps = k * k if depthwise else k * k * c
    out_q = _out_q(rng, in_q.scale[0], float(np.median(scales)), taps)
    ins = [act("x", (1, h, w, c), in_q), weights, bias]
    return single_op_qgraph(kind, ins, (1, oh, ow, o), out_q, attrs)


def pool(kind: OpKind, k: int, stride: int, pads: Pads, rescale: bool = False) -> Graph:
    h = w = 8
    in_q = qp(0.05, -7)
    out_q = qp(0.07, 3) if rescale else in_q
    oh, ow = out_size(h, k, stride, 1, pads[0], pads[1]), out_size(w, k, stride, 1, *pads[2:])
    attrs = {"kernel": (k, k), "stride": (stride, stride), "padding": pads, "fuse": "NONE"}
    return single_op_qgraph(kind, [act("x", (1, h, w, 4), in_q)], (1, oh, ow, 4), out_q, attrs)


def fully_connected(n_in: int, n_out: int, per_channel: bool) -> Graph:
    rng = rng_for(f"FULLY_CONNECTED/{n_in}/{n_out}/{per_channel}")
    in_q = qp(0.05, -7)
    n_scales = n_out if per_channel else 1
    scales = np.exp(rng.uniform(np.log(0.004), np.log(0.02), size=n_scales)).astype(np.float32)
    w = const(
        "w", random_int8(rng, (n_out, n_in), lo=-127), qp(scales, 0, 0 if per_channel else None)
    )
    b_scales = np.float32(in_q.scale[0]) * np.broadcast_to(scales, (n_out,))
    bias = const("bias", rng.integers(-2000, 2000, size=n_out).astype(np.int32), qp(b_scales, 0, 0))
    out_q = _out_q(rng, in_q.scale[0], float(np.median(scales)), n_in)
    ins = [act("x", (1, n_in), in_q), w, bias]
    return single_op_qgraph(OpKind.FULLY_CONNECTED, ins, (1, n_out), out_q, {"fuse": "NONE"})


def _same_form(build: partial[Graph]) -> ProbeModel:
    """The implicit SAME code on the TF-SAME geometry; compared with three explicit readings."""
    refs = {
        "TF-asymmetric (extra pad after)": build(pads=TF_SAME),
        "symmetric (PyTorch)": build(pads=SYMMETRIC),
        "extra pad before": build(pads=EXTRA_BEFORE),
    }
    return ProbeModel(refs["TF-asymmetric (extra pad after)"], implicit(), refs)


def _plain(build: partial[Graph], **kw: object) -> ProbeModel:
    return ProbeModel(build(**kw))


def _unreferenced(build: partial[Graph]) -> ProbeModel:
    """A constraint probe: the int8 reference refuses it by design, so nothing to compare."""
    return ProbeModel(build(), references={})


def window_probes() -> list[Probe]:
    probes: list[Probe] = []
    for kind in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D):
        name = kind.name

        def c(pc: bool, stride: int, tag: str, kind: OpKind = kind) -> partial[Graph]:
            return partial(conv, kind, pc, stride, tag=tag)

        probes += [
            Probe(name, "3x3 s1 valid", "base", partial(_plain, c(False, 1, "v"), pads=VALID)),
            Probe(
                name, "per-channel w", "per_channel", partial(_plain, c(True, 1, "pc"), pads=VALID)
            ),
            Probe(
                name, "s2 TF-SAME pads", "pad_same", partial(_plain, c(True, 2, "s2"), pads=TF_SAME)
            ),
            Probe(
                name,
                "s2 sym pads",
                "pad_symmetric",
                partial(_plain, c(True, 2, "s2"), pads=SYMMETRIC),
            ),
            Probe(name, "s2 implicit SAME", "same_form", partial(_same_form, c(True, 2, "s2"))),
        ]
    for kind in (OpKind.AVERAGE_POOL_2D, OpKind.MAX_POOL_2D):
        name = kind.name
        p3 = partial(pool, kind, 3, 2)
        probes += [
            Probe(
                name, "2x2 s2 valid", "base", partial(_plain, partial(pool, kind, 2, 2), pads=VALID)
            ),
            Probe(name, "3x3 s2 TF-SAME pads", "pad_same", partial(_plain, p3, pads=TF_SAME)),
            Probe(name, "3x3 s2 sym pads", "pad_symmetric", partial(_plain, p3, pads=SYMMETRIC)),
            Probe(name, "3x3 s2 implicit SAME", "same_form", partial(_same_form, p3)),
            Probe(
                name,
                "rescaled output",
                "rescale",
                partial(_unreferenced, partial(pool, kind, 2, 2, VALID, rescale=True)),
            ),
        ]
    fc = "FULLY_CONNECTED"
    probes += [
        Probe(fc, "16->8", "base", partial(_plain, partial(fully_connected, 16, 8, False))),
        Probe(
            fc,
            "16->8 per-channel",
            "per_channel",
            partial(_plain, partial(fully_connected, 16, 8, True)),
        ),
        Probe(
            fc, "1280->1000", "size", partial(_plain, partial(fully_connected, 1280, 1000, False))
        ),
        Probe(
            fc,
            "1280->1000 per-channel",
            "size_per_channel",
            partial(_plain, partial(fully_connected, 1280, 1000, True)),
            note="the real classifier head of silicon fact 3",
        ),
    ]
    return probes
