"""Scale ties between activations: the union-find `quantize` groups tied tensors with, and
the check that a tensor tied to a fixed-output tensor fits the fixed params."""

from __future__ import annotations

from collections.abc import Sequence

from mdla_ir import Graph, QuantParams
from mdla_quant.errors import QuantError
from mdla_quant.observers import Histogram


class Groups:
    """Union-find over tensor names, for scale ties."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, a: str) -> str:
        self.parent.setdefault(a, a)
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, names: Sequence[str]) -> None:
        root = self.find(names[0])
        for n in names[1:]:
            self.parent[self.find(n)] = root


def check_fits(graph: Graph, name: str, fixed_by: str, h: Histogram, q: QuantParams) -> None:
    """A tensor tied to a fixed-output tensor takes its params: its values must fit them."""
    lo = q.scale[0] * (-128 - q.zero_point[0])
    hi = q.scale[0] * (127 - q.zero_point[0])
    slack = 2 * q.scale[0]
    if name != fixed_by and (h.lo < lo - slack or h.hi > hi + slack):
        raise QuantError(
            f"graph `{graph.name}`: `{name}` (range [{h.lo:.4g}, {h.hi:.4g}]) shares a scale with "
            f"`{fixed_by}`, whose output params are fixed to [{lo:.4g}, {hi:.4g}] by the target; "
            "the device cannot requantize between them (separate the two, e.g. concatenate "
            "before the fixed-output op; a concatenation that makes a model output of them "
            "joins them in float32 on the CPU: --cpu auto places it there)"
        )
