"""Converters for the parametric ReLUs: `nn.PReLU` / `F.prelu` and `nn.LeakyReLU` /
`F.leaky_relu`, both one PRELU op (y = x for x >= 0, alpha * x otherwise).

PReLU's weight holds one alpha or one per channel (dim 1 of the input); it becomes a constant of
shape (C, 1, ..., 1) so it broadcasts over an NCHW input as torch applies it. LeakyReLU is PRELU
with a one-element constant alpha = negative_slope (LiteRT lowers LeakyRelu the same way).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.graph import Tensor
from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.ops import OpKind


def _alpha(c: Ctx, x: Any, weight: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The alphas shaped to broadcast over x: (1,) or (C, 1, ..., 1)."""
    shape = c.tensors[c.ref(x)].shape
    w = np.asarray(weight, np.float32).reshape(-1)
    if w.size > 1:
        if len(shape) < 2 or shape[1] != w.size:
            raise Unsupported(f"PReLU with {w.size} alphas over input {shape}")
        w = w.reshape((w.size,) + (1,) * (len(shape) - 2))
    return w


def m_prelu(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    q = str(c.node.target) if c.node else "prelu"
    x = args[0] if args else kw["input"]
    alpha = c.const(f"{q}.weight", _alpha(c, x, m.weight.detach().cpu().numpy()))
    c.emit(OpKind.PRELU, [c.ref(x), alpha])


def f_prelu(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "weight"), args, strict=False)) | kw
    w = a["weight"]
    if not (c.is_tensor(w) and c.tensors[c.refs[w]].is_const):
        raise Unsupported("prelu weight is computed at run time (only constants import)")
    name = c.refs[w]
    data = c.tensors[name].data
    assert data is not None  # a constant tensor
    shaped = _alpha(c, a["input"], data)
    if shaped.shape != data.shape:
        if any(name in op.inputs for op in c.ops):  # shared: keep it, add the shaped copy
            name = c.const(f"{name}.alpha", shaped)
        else:
            c.tensors[name] = Tensor(name, shaped.shape, "float32", data=shaped)
    c.emit(OpKind.PRELU, [c.ref(a["input"]), name])


def _leaky(c: Ctx, x: Any, slope: float) -> None:
    name = f"{c.node.name if c.node else 'leaky_relu'}.negative_slope"
    c.emit(OpKind.PRELU, [c.ref(x), c.const(name, np.array([slope], np.float32))])


def m_leaky_relu(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    _leaky(c, args[0] if args else kw["input"], float(m.negative_slope))


def f_leaky_relu(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "negative_slope"), args, strict=False)) | kw
    _leaky(c, a["input"], float(c.value(a.get("negative_slope", 0.01))))
