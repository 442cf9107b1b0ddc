"""Which known torch module a module computes as: its own class when the tables name it, else
the nearest base class they name, provided the subclass changes nothing the base computes with.

A subclass that only adds attributes or a different constructor (`class MyBN(nn.BatchNorm2d)`
with an inherited forward) is the base layer and imports as it, named by its own qualified name.
A subclass that overrides any method of the base (forward, `_conv_forward`, ...) is not: fx
traces into its forward, and what that calls (`F.batch_norm`, then an activation module, in
the fused BatchNorm + activation pattern) is imported call by call.
"""

from __future__ import annotations

from collections.abc import Collection

from torch import nn

# Methods a subclass may define without changing what the base computes.
HARMLESS = frozenset({"__init__", "extra_repr", "reset_parameters", "__repr__", "__setstate__"})


def known_base(module: nn.Module, known: Collection[type]) -> type | None:
    """`type(module)` if it is in `known`, else the nearest base in `known` whose methods the
    classes in between do not override (None when there is no such base)."""
    cls = type(module)
    if cls in known:
        return cls
    between: list[type] = []
    for base in cls.__mro__:
        if base in known:
            return base if not _overrides(between, base) else None
        between.append(base)
    return None


def _overrides(classes: list[type], base: type) -> bool:
    return any(
        callable(value) and hasattr(base, name) and name not in HARMLESS
        for cls in classes
        for name, value in vars(cls).items()
    )
