"""`--cpu`: explicit CPU partitions, shared by `check`, `compile`, `export` and `bisect`; the
placement itself is `mdla_compile.place_graph`'s.

    placement = place_graph(source.graph, "mdla3.5", "mtk-mdla", ["LAYER_NORM,GELU"])
    report(placement)          # per op: device, partition, why; partitions; device switches

A `--cpu` token that selects nothing is a usage error (exit 2); an op left on the NPU that does
not map is exit 3, as without `--cpu`, unless `--cpu auto` places it (auto places exactly the
ops that do not map, and says which on stderr); an op that maps but was named is placed on the
CPU with a warning.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from mdla_compile import place_graph
from mdla_legalize import Placement

__all__ = ["Cpu", "place_graph", "report"]

Cpu = Annotated[
    list[str] | None,
    typer.Option(
        "--cpu",
        help="Run these ops on the phone's CPU, the rest on the NPU: op kinds "
        "(LAYER_NORM,GELU), fnmatch patterns over op names ('features.7.*'), or `auto` (exactly "
        "the ops that do not map on the NPU, printed); comma-separated, repeatable. Without "
        "`auto`, an op that does not map and is not named here is still an error.",
    ),
]


def report(placement: Placement) -> None:
    """The placement table on stdout, its notes (what `--cpu auto` placed) and warnings on
    stderr."""
    typer.echo(str(placement))
    for line in (*placement.notes, *placement.warnings):
        sys.stderr.write(line + "\n")
