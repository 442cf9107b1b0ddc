"""Folding on the export path: an ATen op whose inputs are all constants (parameters, buffers,
lifted constant tensors, or results folded before it) is run once here, on the real tensors, and
its result becomes an IR constant: a layer-scale parameter reshaped for broadcasting, a bias
table indexed by a constant index buffer (`table[:, idx]`), an `arange` grid. No op is emitted,
so no rule needs to know these constructs; the value is torch's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import fx

from mdla_ir.importer.context import Ctx


def _is_constant(c: Ctx, node: fx.Node) -> bool:
    if node in c.refs:
        return c.tensors[c.refs[node]].is_const
    return node in c.values


def _constant(c: Ctx, node: fx.Node) -> Any:
    """The real value of a constant input node."""
    if node in c.refs:
        return torch.from_numpy(np.array(c.tensors[c.refs[node]].data))
    return c.values[node]


def fold(c: Ctx, node: fx.Node) -> bool:
    """Fold `node` when every input is a constant (see the module docstring); False otherwise."""
    if node.op != "call_function" or not callable(node.target):
        return False
    if not all(_is_constant(c, a) for a in node.all_input_nodes):
        return False
    values = {a: _constant(c, a) for a in node.all_input_nodes}
    args = fx.map_arg(node.args, lambda a: values[a])
    kwargs = fx.map_arg(dict(node.kwargs), lambda a: values[a])
    with torch.no_grad():
        result = node.target(*args, **kwargs)
    if isinstance(result, torch.Tensor) and result.is_floating_point():
        c.refs[node] = c.const(node.name, result.detach().cpu().numpy().astype(np.float32))
    else:
        c.values[node] = result  # an index tensor, a tuple of pieces: read by what follows
    return True


def unit(c: Ctx, node: fx.Node) -> bool:
    """`x * 1` (`aten.mul` by the Python scalar 1, what export makes of `1.0 / y`: reciprocal,
    then this) is `x`: no op, as the fx path has none."""
    if node.target not in (torch.ops.aten.mul.Tensor, torch.ops.aten.mul.Scalar):
        return False
    x, other = node.args[:2]
    if isinstance(x, int | float) and not isinstance(x, bool):
        x, other = other, x
    if not isinstance(x, fx.Node) or isinstance(other, fx.Node) or other != 1:
        return False
    if x not in c.refs or node.meta["val"].shape != x.meta["val"].shape:
        return False
    c.refs[node] = c.refs[x]
    return True
