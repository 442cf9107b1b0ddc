"""`Imported`: what `mdla_ir.import_torch` gives (torch-free, so callers can name the type)."""

from __future__ import annotations

from dataclasses import dataclass

from mdla_ir.graph import Graph

PATHS = ("fx", "export", "auto")  # the ways into the IR (mdla_ir.importer)
DEFAULT_PATH = "auto"  # torch.fx where it traces, maps and has no in-place hazard, else export


@dataclass(frozen=True)
class Imported:
    """An imported graph, the path that imported it ("export" or "fx"), and a note saying why
    when that is not simply the path asked for ("" otherwise)."""

    graph: Graph
    path: str
    note: str
