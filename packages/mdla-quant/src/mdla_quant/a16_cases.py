"""Small random float graphs, one per op with a 16x8 kernel, for the int16 tests: each runs
its op on int16 activations once quantized with `a16` naming the op's output (the quantizer
puts a QUANTIZE int8 -> int16 in front, and the op's output is a graph output)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mdla_ir import Graph, OpKind
from mdla_ir.builder import GraphBuilder

Rng = np.random.Generator


FUSES = ("NONE", "RELU", "RELU6")


def _conv(b: GraphBuilder, rng: Rng, x: str, c: int, depthwise: bool) -> str:
    k, s, d = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    pad = tuple(int(p) for p in rng.integers(0, k, 4)) if k > 1 else (0, 0, 0, 0)
    mult = int(rng.integers(1, 3)) if depthwise else 1
    o = c * mult if depthwise else int(rng.integers(1, 6))
    shape = (1, k, k, o) if depthwise else (o, k, k, c)
    kind = OpKind.DEPTHWISE_CONV_2D if depthwise else OpKind.CONV_2D
    attrs: dict[str, Any] = {"stride": (s, s), "dilation": (d, d), "padding": pad, "groups": 1}
    if depthwise:
        attrs["multiplier"] = mult
    return b.op(
        kind,
        [x, b.const("w", shape), b.const("bias", (o,))],
        name="y",
        fuse=FUSES[int(rng.integers(3))],
        **attrs,
    )


def _pool(b: GraphBuilder, rng: Rng, x: str, kind: OpKind) -> str:
    k = int(rng.integers(1, 4))
    pad = tuple(int(p) for p in rng.integers(0, k, 4)) if kind is OpKind.MAX_POOL_2D else (0,) * 4
    s = int(rng.integers(1, 3))
    return b.op(kind, [x], name="y", kernel=(k, k), stride=(s, s), padding=pad, fuse="NONE")


def _binary(b: GraphBuilder, rng: Rng, x: str, kind: OpKind) -> str:
    other = b.input("x2", (1, 1, 1, 4) if rng.integers(2) else (1, 7, 7, 4))
    return b.op(kind, [x, other], name="y", fuse=FUSES[int(rng.integers(3))])


def _bilinear(b: GraphBuilder, rng: Rng, x: str) -> str:
    """Up or down, with neither flag, align_corners or half_pixel_centers (the forms the
    exporter writes)."""
    flags = int(rng.integers(3))
    size = ((14, 10), (4, 5), (9, 13))[int(rng.integers(3))]
    return b.op(
        OpKind.RESIZE_BILINEAR,
        [x],
        name="y",
        size=size,
        align_corners=flags == 1,
        half_pixel_centers=flags == 2,
    )


def _fc(b: GraphBuilder, x: str) -> str:
    flat = b.op(OpKind.RESHAPE, [x], name="flat", shape=(1, 196))
    weights = [b.const("w", (16, 196)), b.const("bias", (16,))]
    return b.op(OpKind.FULLY_CONNECTED, [flat, *weights], name="y", fuse="NONE")


BUILDERS: dict[OpKind, Callable[[GraphBuilder, Rng, str], str]] = {
    OpKind.CONV_2D: lambda b, r, x: _conv(b, r, x, 4, False),
    OpKind.DEPTHWISE_CONV_2D: lambda b, r, x: _conv(b, r, x, 4, True),
    OpKind.FULLY_CONNECTED: lambda b, r, x: _fc(b, x),
    OpKind.ADD: lambda b, r, x: _binary(b, r, x, OpKind.ADD),
    OpKind.SUB: lambda b, r, x: _binary(b, r, x, OpKind.SUB),
    OpKind.MUL: lambda b, r, x: _binary(b, r, x, OpKind.MUL),
    OpKind.MAX_POOL_2D: lambda b, r, x: _pool(b, r, x, OpKind.MAX_POOL_2D),
    OpKind.AVERAGE_POOL_2D: lambda b, r, x: _pool(b, r, x, OpKind.AVERAGE_POOL_2D),
    OpKind.RESHAPE: lambda b, r, x: b.op(OpKind.RESHAPE, [x], name="y", shape=(1, 49, 4)),
    OpKind.PAD: lambda b, r, x: b.op(
        OpKind.PAD, [x], name="y", pads=((0, 0), (1, 2), (0, 1), (0, 0))
    ),
    OpKind.MEAN: lambda b, r, x: b.op(
        OpKind.MEAN, [x], name="y", axes=(1, 2), keepdims=bool(r.integers(2))
    ),
    OpKind.TRANSPOSE: lambda b, r, x: b.op(OpKind.TRANSPOSE, [x], name="y", perm=(0, 2, 1, 3)),
    OpKind.RESIZE_NEAREST_NEIGHBOR: lambda b, r, x: b.op(
        OpKind.RESIZE_NEAREST_NEIGHBOR,
        [x],
        name="y",
        size=(14, 10),
        align_corners=bool(r.integers(2)),
        half_pixel_centers=False,
    ),
    OpKind.RESIZE_BILINEAR: lambda b, r, x: _bilinear(b, r, x),
    OpKind.PRELU: lambda b, r, x: b.op(
        OpKind.PRELU,
        [x, b.const("alpha", ((1, 1, 1, 4), (1, 1, 1, 1))[int(r.integers(2))])],
        name="y",
    ),
    OpKind.LOGISTIC: lambda b, r, x: b.op(OpKind.LOGISTIC, [x], name="y"),
    OpKind.TANH: lambda b, r, x: b.op(OpKind.TANH, [x], name="y"),
    OpKind.SOFTMAX: lambda b, r, x: b.op(
        OpKind.SOFTMAX, [x], name="y", axis=int(r.choice([-1, 1])), beta=float(r.uniform(0.5, 2))
    ),
    OpKind.CONCATENATION: lambda b, r, x: b.op(
        OpKind.CONCATENATION, [x, b.input("x2", (1, 7, 7, 3))], name="y", axis=3
    ),
}


def a16_case(kind: OpKind, seed: int) -> tuple[Graph, tuple[str, ...], list[list[Any]]]:
    """(float NHWC graph, the a16 names, calibration samples) of a random `kind` case; the
    samples are uniform (their widest spans +-4), so random int8 codes look like them."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(f"a16_{kind.name.lower()}", layout="NHWC", seed=seed)
    x = b.input("x", (1, 7, 7, 4))
    y = BUILDERS[kind](b, rng, x)
    graph = b.build(y)
    samples = [
        [
            rng.uniform(-1 - k, 1 + k, graph.tensors[n].shape).astype(np.float32)
            for n in graph.inputs
        ]
        for k in range(4)
    ]
    return graph, (y,), samples
