"""1-D (audio, ECG) activations held channels-last: (N, C, L) as (N, L, C) on the device.

The importer maps Conv1d and the 1-D pools on the H = 1 image (N, C, 1, L) between RESHAPEs;
the layout pass holds that image NHWC, (N, 1, L, C), whose memory order is (N, L, C). A 3-D
activation held (N, L, C) therefore meets its image through plain RESHAPEs, where held as the
model's (N, C, L) each RESHAPE needs TRANSPOSEs on either side (which the MDLA does not map).

`sequence_tensors` picks the 3-D activations to hold (N, L, C): the largest set S such that
every op that writes or reads a tensor of S has a channels-last form for it:

    RESHAPE          to or from the tensor's H = 1 image (N, C, 1, L) (or (N, C, L, 1, 1))
    PAD, unary activations, elementwise binary ops, CONCATENATION, SOFTMAX, (STRIDED_)SLICE,
    GROUP_NORM
                     every 3-D activation they touch in S (the layout pass renumbers their axes;
                     a constant operand is permuted beside the activation)
    MEAN, REDUCE_*   reading S (axes renumbered; a mean over channels or over time keeps the
                     remaining dims' order)
    TRANSPOSE        reading S (the permute of a CRNN, (N, C, L) -> (N, L, C), becomes an
                     identity); its output is held as the model's

S starts as every 3-D activation and loses, to a fixed point, each tensor an op touches without
such a form. Graph inputs and outputs in S keep the model's (N, C, L) for callers through
`Graph.boundary`, as images do.
"""

from __future__ import annotations

from mdla_ir import Graph, Op, OpKind
from mdla_ir.ops import ACTIVATIONS, BINARY
from mdla_legalize.rules.base import Ctx, Rule, derive, pat
from mdla_legalize.rules.heads import linear_bias

SEQ = (0, 2, 1)
SAME_FORM = (
    ACTIVATIONS
    | BINARY
    | frozenset(
        {
            OpKind.PAD,
            OpKind.CONCATENATION,
            OpKind.SOFTMAX,
            OpKind.DROPOUT,
            OpKind.STRIDED_SLICE,
            OpKind.SLICE,
            OpKind.GROUP_NORM,
        }
    )
)
READERS = frozenset(
    {OpKind.MEAN, OpKind.REDUCE_SUM, OpKind.REDUCE_MAX, OpKind.REDUCE_MIN, OpKind.TRANSPOSE}
)


def _image_of(graph: Graph, seq: str, other: str) -> bool:
    """`other` is the H = 1 image of `seq` (N, C, 1, L), or a clip of L frames of 1x1 (N, C, L,
    1, 1) (a video head's mean over space): both hold (N, L, C)'s memory order on the device."""
    n, c, length = graph.tensors[seq].shape
    return graph.tensors[other].shape in ((n, c, 1, length), (n, c, length, 1, 1))


def _fits(graph: Graph, op: Op, name: str, held: set[str]) -> bool:
    """Whether `op` has a channels-last form for `name` (one of its tensors) given `held`."""
    if op.kind is OpKind.RESHAPE:
        other = op.outputs[0] if name in op.inputs else op.inputs[0]
        return _image_of(graph, name, other)
    if op.kind in READERS:
        return name in op.inputs
    if op.kind in SAME_FORM:
        acts = [n for n in (*op.inputs, *op.outputs) if not graph.tensors[n].is_const]
        return all(n in held for n in acts)
    return False


def sequence_tensors(graph: Graph) -> dict[str, tuple[int, ...]]:
    """The 3-D activations to hold (N, L, C), each mapped to its permutation (0, 2, 1)."""
    held = {
        n
        for n, t in graph.tensors.items()
        if len(t.shape) == 3 and not t.is_const and t.shape[1] > 1
    }
    touching: dict[str, list[Op]] = {n: [] for n in held}
    for op in graph.ops:
        for n in {*op.inputs, *op.outputs} & held:
            touching[n].append(op)
    changed = True
    while changed:
        changed = False
        for name in sorted(held):
            if not touching[name] or not all(_fits(graph, op, name, held) for op in touching[name]):
                held.discard(name)
                changed = True
    return dict.fromkeys(held, SEQ)


def linear_sequence_to_conv1x1(op: Op, ctx: Ctx) -> list[Op] | None:
    """FULLY_CONNECTED over the last axis of a rank-3 (N, L, C) device tensor (a CRNN's Linear
    after its permute) -> RESHAPE to the image (N, 1, L, C), 1x1 CONV_2D, RESHAPE back."""
    x, w_name = op.inputs[:2]
    w, shape = ctx.const(w_name), ctx.shape(x)
    if ctx.layout != "NHWC" or w is None or len(shape) != 3 or w.shape[1] != shape[2]:
        return None
    (n, length, _), (o, i), (y,) = shape, w.shape, op.outputs
    image = ctx.tensor(f"{x}.image", (n, 1, length, i))
    out = ctx.tensor(f"{y}.image", (n, 1, length, o))
    filt = ctx.add_const(f"{w_name}.conv1x1", w.reshape(o, 1, 1, i))
    attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}
    return [
        derive(op, "image", OpKind.RESHAPE, [x], [image], shape=(n, 1, length, i)),
        derive(
            op,
            "",
            OpKind.CONV_2D,
            [image, filt, linear_bias(op, ctx, o)],
            [out],
            **attrs,
            fuse=op.fuse,
        ),
        derive(op, "sequence", OpKind.RESHAPE, [out], [y], shape=ctx.shape(y)),
    ]


SEQUENCES: list[Rule] = [
    (pat(OpKind.FULLY_CONNECTED), linear_sequence_to_conv1x1),  # FC(N, L, C) -> CONV_2D 1x1
]
