"""Is a torch.fx graph free of in-place aliasing hazards? (`hazard`)

torch.fx records a forward as it is written and does not functionalize it: `x.relu_()`,
`out += identity`, `nn.ReLU(inplace=True)`, `x[0] = y` are nodes like any other, and the fx
importer maps each to its out-of-place op (the IR has no aliasing). That is exact only when
nothing reads the old value after the op has overwritten it: neither the mutated value, nor a
view of it, nor the base it is a view of. `hazard` finds the first in-place node for which
some later node (the graph's output included) still reads such a stale value.

Which values share storage is decided statically and conservatively: an op aliases its tensor
inputs unless it is known to return a fresh tensor (`_FRESH_*`: convolutions, normalizations,
pools, arithmetic, activations that are not in place, ...). Views (`view`, `reshape`,
`permute`, `getitem`, `contiguous`, `detach`, `float`, ...) and every op not listed therefore
alias. A write into a parameter or buffer is a hazard too: the next call reads the value it
wrote, and fx's shape propagation would overwrite the module's own. (A write into a graph
input is not: the importer propagates shapes on copies of the example inputs.)
"""

from __future__ import annotations

import inspect
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import fx, nn

_INPLACE_OPERATORS = frozenset(
    {
        operator.iadd,
        operator.isub,
        operator.imul,
        operator.itruediv,
        operator.ifloordiv,
        operator.imod,
        operator.ipow,
        operator.imatmul,
        operator.iand,
        operator.ior,
        operator.ixor,
        operator.ilshift,
        operator.irshift,
        operator.setitem,
    }
)
_INPLACE_DUNDERS = frozenset(f"__{op.__name__}__" for op in _INPLACE_OPERATORS)

# Functions and methods whose tensor result never shares storage with an input.
_FRESH_FUNCTIONS = frozenset(
    {
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.floordiv,
        operator.neg,
        operator.matmul,
        torch.add,
        torch.sub,
        torch.mul,
        torch.div,
        torch.cat,
        torch.concat,
        torch.stack,
        torch.matmul,
        torch.bmm,
        torch.sigmoid,
        torch.tanh,
        torch.relu,
        torch.clamp,
        torch.mean,
        torch.sum,
        torch.softmax,
        torch.exp,
        torch.sqrt,
        torch.abs,
        torch.clone,
        torch.conv2d,
        F.conv1d,
        F.conv2d,
        F.conv_transpose2d,
        F.linear,
        F.batch_norm,
        F.layer_norm,
        F.group_norm,
        F.interpolate,
        F.avg_pool2d,
        F.max_pool2d,
        F.adaptive_avg_pool2d,
        F.adaptive_max_pool2d,
        F.softmax,
        F.gelu,
        F.sigmoid,
        F.tanh,
        F.hardsigmoid,
        F.normalize,
        F.pixel_shuffle,
        F.pixel_unshuffle,
        F.scaled_dot_product_attention,
    }
)
# Activations that compute in place when called with inplace=True (else they are fresh).
_ACTIVATION_FUNCTIONS = frozenset(
    {F.relu, F.relu6, F.hardswish, F.hardtanh, F.silu, F.mish, F.leaky_relu, F.elu, F.selu}
)
_FRESH_METHODS = frozenset(
    {
        "add",
        "sub",
        "mul",
        "div",
        "matmul",
        "sigmoid",
        "tanh",
        "relu",
        "clamp",
        "mean",
        "sum",
        "softmax",
        "exp",
        "sqrt",
        "rsqrt",
        "abs",
        "neg",
        "pow",
        "clone",
    }
)
_FRESH_MODULES: tuple[type, ...] = (
    nn.modules.conv._ConvNd,
    nn.Linear,
    nn.modules.batchnorm._NormBase,  # BatchNorm and InstanceNorm
    nn.LayerNorm,
    nn.GroupNorm,
    nn.modules.pooling._MaxPoolNd,
    nn.modules.pooling._AvgPoolNd,
    nn.modules.pooling._AdaptiveAvgPoolNd,
    nn.modules.pooling._AdaptiveMaxPoolNd,
    nn.Upsample,
    nn.ReLU,
    nn.ReLU6,
    nn.Hardtanh,
    nn.Hardswish,
    nn.Hardsigmoid,
    nn.SiLU,
    nn.Sigmoid,
    nn.Tanh,
    nn.GELU,
    nn.LeakyReLU,
    nn.ELU,
    nn.Mish,
    nn.PReLU,
    nn.Softmax,
)


@dataclass(frozen=True)
class Hazard:
    """An in-place node and a later node that reads a value it overwrote."""

    inplace: fx.Node
    reader: fx.Node
    stale: fx.Node  # the value `reader` reads: the mutated one, or an alias of it

    def __str__(self) -> str:
        if self.stale.op == "get_attr":
            return f"`{self.inplace.name}` writes in place into `{self.stale.target}`"
        return (
            f"`{self.inplace.name}` writes in place into `{self.stale.name}`, "
            f"which `{self.reader.name}` reads after it"
        )


def hazard(gm: fx.GraphModule) -> Hazard | None:
    """The first in-place node of `gm` whose overwritten value (or an alias of it) a later
    node reads, or that writes into a parameter or buffer; None when every in-place op can
    be imported as its out-of-place form."""
    nodes = list(gm.graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    roots = _alias_roots(gm, nodes)
    for n in nodes:
        target = mutated(gm, n)
        if target is None:
            continue
        stale = [a for a in nodes[: order[n]] if roots[a] is roots[target]]
        for s in stale:
            if s.op == "get_attr":
                return Hazard(n, n, s)
            later = [u for u in s.users if order[u] > order[n]]
            if later:
                return Hazard(n, min(later, key=order.__getitem__), s)
    return None


def mutated(gm: fx.GraphModule, n: fx.Node) -> fx.Node | None:
    """The node whose value `n` overwrites in place (None if `n` writes nothing)."""
    first = n.args[0] if n.args else None
    if not isinstance(first, fx.Node):
        return None
    if n.op == "call_method":
        name = str(n.target)
        if name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("_")):
            return first
    elif n.op == "call_function":
        name = getattr(n.target, "__name__", "")
        if n.target in _INPLACE_OPERATORS or (name.endswith("_") and not name.startswith("_")):
            return first
        if _inplace_argument(n):
            return first
    elif n.op == "call_module" and getattr(gm.get_submodule(str(n.target)), "inplace", False):
        return first
    return None


def _inplace_argument(n: fx.Node) -> bool:
    """True for a call like `F.relu(x, inplace=True)` (by keyword or position)."""
    if "inplace" in n.kwargs:
        return bool(n.kwargs["inplace"])
    try:
        bound = inspect.signature(n.target).bind(*n.args, **n.kwargs)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return bool(bound.arguments.get("inplace", False))


def _fresh(gm: fx.GraphModule, n: fx.Node) -> bool:
    """True when `n`'s result is a new tensor, sharing storage with none of its inputs."""
    if n.op == "call_module":
        m = gm.get_submodule(str(n.target))
        return isinstance(m, _FRESH_MODULES) and not getattr(m, "inplace", False)
    if n.op == "call_method":
        return str(n.target) in _FRESH_METHODS
    if n.op == "call_function":
        if n.target in _ACTIVATION_FUNCTIONS:
            return not _inplace_argument(n)
        return n.target in _FRESH_FUNCTIONS
    return True  # placeholder, get_attr, output: roots of their own


def _alias_roots(gm: fx.GraphModule, nodes: list[fx.Node]) -> dict[fx.Node, Any]:
    """Each node's alias class (union-find root): an in-place node joins the class of the
    value it writes, any other node that is not fresh the class of each of its inputs;
    get_attr nodes of one attribute are one class."""
    parent: dict[Any, Any] = {}

    def find(x: Any) -> Any:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for n in nodes:
        find(n)
        written = mutated(gm, n)
        if n.op == "get_attr":
            parent[find(n)] = find(("attr", str(n.target)))
        elif written is not None:  # the result is the written value, not the other operands
            parent[find(written)] = find(n)
        elif not _fresh(gm, n):
            for a in n.all_input_nodes:
                parent[find(a)] = find(n)
    return {n: find(n) for n in nodes}
