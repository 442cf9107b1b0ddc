"""`number + x`, `number * x` and `number / x` on the fx path, as torch computes them and so as
torch.export records them (Python calls the tensor's reflected operator): `x + number`,
`x * number` (the tensor first), and `reciprocal(x) * number` (RECIPROCAL, then MUL by the
number unless it is 1, as `aten_fold.unit` drops `x * 1`). Both paths import the same ops."""

from __future__ import annotations

from typing import Any

from mdla_ir.importer.context import Converter, Ctx
from mdla_ir.ops import OpKind


def _reflected(c: Ctx, args: tuple[Any, ...]) -> bool:
    """True for `number <op> tensor` (Python then calls the tensor's `__r<op>__`)."""
    return len(args) == 2 and not c.is_tensor(args[0]) and c.is_tensor(args[1])


def commuted(kind: OpKind) -> Converter:
    """operator.add / operator.mul: the tensor operand first."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        a, b = (args[1], args[0]) if _reflected(c, args) else (args[0], args[1])
        c.emit(kind, [c.ref(a), c.ref(b)], fuse="NONE")

    return convert


def truediv(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """operator.truediv: DIV, or for `number / x` reciprocal(x) * number."""
    a, b = args[0], args[1]
    if not _reflected(c, args):
        c.emit(OpKind.DIV, [c.ref(a), c.ref(b)], fuse="NONE")
        return
    assert c.node is not None
    c.emit(OpKind.RECIPROCAL, [c.ref(b)])  # the number / x has x's shape: the node's
    if c.value(a) == 1 and not isinstance(c.value(a), bool):
        return
    # both named by the node, as export names its two (legalize's DIV split uses `.reciprocal`)
    c.emit(OpKind.MUL, [c.refs[c.node], c.ref(a)], fuse="NONE")
