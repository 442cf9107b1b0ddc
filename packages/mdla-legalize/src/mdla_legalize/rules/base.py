"""The rule engine: a rule is a `(pattern, fn)` pair, a table is a list of rules.

A pattern is the set of op kinds a rule looks at; `fn(op, ctx)` returns the ops that replace
`op` (they must produce `op`'s outputs, so consumers need no rewiring), or None when the rule does
not apply. `apply_table` walks the ops once, trying the rules in table order; `legalize` repeats
tables until nothing changes. Tables compose with `+`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.devices import NPU
from mdla_ir.passes import PassResult, Rewriter
from mdla_target.target import OpSpec, Target

Array = np.ndarray[Any, Any]


class Ctx:
    """What a rule may look at and create while a table is applied."""

    def __init__(self, rw: Rewriter, target: Target | None, device: str) -> None:
        self.rw, self.target, self.device = rw, target, device
        self.graph = rw.old

    @property
    def layout(self) -> str:
        return self.graph.layout

    def shape(self, name: str) -> tuple[int, ...]:
        return self.rw.tensors[name].shape

    def const(self, name: str) -> Array | None:
        return self.rw.tensors[name].data

    def producer(self, name: str) -> Op | None:
        """The already emitted op producing `name` (None for inputs and constants)."""
        return self.rw.producer(name)

    def sole_use(self, name: str) -> bool:
        return self.rw.sole_use(name)

    def take(self, name: str) -> Op:
        """Remove the already emitted producer of `name` (the rule re-emits what it needs)."""
        return self.rw.remove_producer(name)

    def tensor(self, hint: str, shape: Sequence[int]) -> str:
        """A fresh activation tensor named after `hint`."""
        name, i = hint, 1
        while name in self.rw.tensors:
            name, i = f"{hint}.{i}", i + 1
        self.rw.tensors[name] = Tensor(name, tuple(int(d) for d in shape))
        return name

    def add_const(self, hint: str, data: Array) -> str:
        return self.rw.add_const(hint, np.ascontiguousarray(data))

    def spec(self, kind: OpKind) -> OpSpec | None:
        return None if self.target is None else self.target.op(self.device, kind)


RuleFn = Callable[[Op, Ctx], list[Op] | None]
Rule = tuple[frozenset[OpKind], RuleFn]


def pat(*kinds: OpKind) -> frozenset[OpKind]:
    return frozenset(kinds)


def apply_table(
    table: Sequence[Rule], graph: Graph, target: Target | None = None, device: str = NPU
) -> PassResult:
    """One walk over the ops; the first rule that returns a replacement wins. The result's
    `fired` counts each rule that fired (the pass manager's trace, then `provenance.rules`).
    An op a rule left without readers (a RESHAPE or selection it read past, which other ops
    also read when the rule ran) is dropped."""
    rw = Rewriter(graph)
    ctx = Ctx(rw, target, device)
    fired: dict[str, int] = {}
    for op in rw:
        for kinds, fn in table:
            new = fn(op, ctx) if op.kind in kinds else None
            if new is not None:
                for o in new:
                    rw.emit(o)
                fired[fn.__name__] = fired.get(fn.__name__, 0) + 1
                break
        else:
            rw.emit(op)
    result = rw.finish()
    return PassResult(drop_unread(result.graph), True, fired) if result.changed else result


def drop_unread(graph: Graph) -> Graph:
    """`graph` without the ops none of whose outputs is read or returned (to a fixed point)."""
    while True:
        read = {n for op in graph.ops for n in op.inputs} | set(graph.outputs)
        dead = {op.name for op in graph.ops if not any(o in read for o in op.outputs)}
        if not dead:
            return graph
        rw = Rewriter(graph)
        for op in rw:
            if op.name not in dead:
                rw.emit(op)
        graph = rw.finish().graph


def rule_names(table: Sequence[Rule]) -> list[str]:
    return [fn.__name__ for _, fn in table]


def single(fn: RuleFn, *kinds: OpKind) -> list[Rule]:
    """A one-rule table (for tests and for `explain`'s fix lookup)."""
    return [(pat(*kinds), fn)]


def derive(
    op: Op, suffix: str, kind: OpKind, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any
) -> Op:
    """A new op standing for part of `op` (its name extended by `suffix`, same source)."""
    name = f"{op.name}.{suffix}" if suffix else op.name
    return Op(kind, name, tuple(inputs), tuple(outputs), attrs, op.source)


def valid_conv(
    op: Op,
    operands: Sequence[str],
    y: str,
    *,
    stride: Sequence[int] = (1, 1),
    fuse: str | None = None,
    suffix: str = "",
) -> Op:
    """A VALID CONV_2D (no padding or dilation, one group) standing for `op`: `operands`
    (input, filter, bias) -> y at `stride`, with `op`'s fused activation unless `fuse` says
    otherwise."""
    return derive(
        op,
        suffix,
        OpKind.CONV_2D,
        operands,
        [y],
        stride=tuple(stride),
        dilation=(1, 1),
        padding=(0, 0, 0, 0),
        groups=1,
        fuse=op.fuse if fuse is None else fuse,
    )


def one_hot_conv(
    op: Op,
    ctx: Ctx,
    x: str,
    y: str,
    filt: np.ndarray[Any, Any],
    *,
    stride: Sequence[int] = (1, 1),
    suffix: str = "",
) -> Op:
    """A `valid_conv` copying one input tap per output channel (`filt` one-hot, zero bias, no
    activation): `mdla_ir.selection`'s selection, exact in int8."""
    w = ctx.add_const(f"{op.name}.selection", filt)
    bias = ctx.add_const(f"{op.name}.zero_bias", np.zeros(filt.shape[0], np.float32))
    return valid_conv(op, [x, w, bias], y, stride=stride, fuse="NONE", suffix=suffix)
