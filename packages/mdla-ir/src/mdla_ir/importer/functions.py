"""Converters for the smooth activations the MDLA lacks (no EXP, silicon fact 2), each imported
as its own kind so that `check` names it and a CPU partition runs it as an int8 table
(`mdla_ir.functions`): nn.ELU / CELU / SELU / Softplus / Mish / LogSigmoid / Tanhshrink /
Softsign, their `F.*` functions and their ATen ops (`torch.export`).

Every converter reads the function's parameters from the module, or from the call's positional
and keyword arguments in torch's own order (`F.elu(x, alpha)`, `aten.elu(x, alpha, scale,
input_scale)`); `inplace` is ignored (the IR has no aliasing).
"""

from __future__ import annotations

from typing import Any

from mdla_ir.importer.context import Converter, Ctx
from mdla_ir.ops import OpKind


def _params(
    c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any], names: tuple[str, ...]
) -> dict[str, float]:
    """{attribute: value} of `names` (`name` or `name=module_field`), from the module `m` or
    from the call's arguments after the input."""
    found: dict[str, float] = {}
    for i, spec in enumerate(names):
        attr, _, field = spec.partition("=")
        if m is not None:
            found[attr] = float(getattr(m, field or attr))
        elif attr in kw or field in kw:
            found[attr] = float(c.value(kw.get(attr, kw.get(field))))
        elif len(args) > i + 1:
            found[attr] = float(c.value(args[i + 1]))
    return found


def function(kind: OpKind, *names: str) -> Converter:
    """The converter of `kind`, with the attributes `names` in the call's argument order."""

    def convert(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        x = args[0] if args else kw.get("input", kw.get("self"))
        c.emit(kind, [c.ref(x)], **_params(c, m, args, kw, names))

    return convert


ELU = function(OpKind.ELU, "alpha")
ATEN_ELU = function(OpKind.ELU, "alpha", "scale", "input_scale")
CELU = function(OpKind.CELU, "alpha")
SELU = function(OpKind.SELU)
SOFTPLUS = function(OpKind.SOFTPLUS, "beta", "threshold")
MISH = function(OpKind.MISH)
LOG_SIGMOID = function(OpKind.LOG_SIGMOID)
TANHSHRINK = function(OpKind.TANHSHRINK)
SOFTSIGN = function(OpKind.SOFTSIGN)

# torch's elementwise functions, by their name in torch, Tensor and ATen (the table group's
# `schema.ELEMENTWISE_TABLES`): each one op of its kind.
ELEMENTWISE = {
    "cos": OpKind.COS,
    "sin": OpKind.SIN,
    "tan": OpKind.TAN,
    "atan": OpKind.ATAN,
    "expm1": OpKind.EXPM1,
    "log1p": OpKind.LOG1P,
}
