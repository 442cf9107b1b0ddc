"""torch.fx symbolic tracing for the fx importer (`trace`), and what `auto` must know about a
trace before it may use it instead of torch.export (`fx_risk`).

A trace is the forward as torch.fx saw it; the fx importer's graph can differ from torch.export's
(which functionalizes) where an in-place op overwrites a value that is read afterwards
(`aliasing.hazard`: the fx importer maps in-place ops out of place). A forward that asks how it
is being run takes the same branch on both paths where it asks
`torch.fx._symbolic_trace.is_fx_tracing()` (True under torch.fx and torch.export alike) or
`torch.jit.is_tracing()` (False under both); only `torch.compiler.is_compiling()` /
`is_exporting()` tell them apart, and there torch.fx takes eager's branch.
"""

from __future__ import annotations

import os
import traceback

import torch
from torch import fx, nn

from mdla_ir.errors import IRError
from mdla_ir.importer.aliasing import hazard
from mdla_ir.importer.context import target_name
from mdla_ir.importer.subclasses import known_base
from mdla_ir.importer.tables import MODULES

_TORCH_DIR = f"{os.sep}torch{os.sep}"
# Calls whose fx mapping is exact but not op for op export's: `unbind` emits each piece's
# SLICE and RESHAPE where the piece is read, export every SLICE and then every RESHAPE, and the
# passes then fold the RESHAPEs differently (a stack of the pieces ends other ops).
_BUILT_OTHERWISE: frozenset[object] = frozenset({"unbind", torch.unbind})


class Tracer(fx.Tracer):
    """torch.nn modules are leaves (fx's default); so are modules that are identities in eval."""

    def __init__(self) -> None:
        super().__init__()
        self.record_stack_traces = True

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        if type(m).__name__ == "StochasticDepth" or known_base(m, MODULES) is not None:
            return True
        return super().is_leaf_module(m, module_qualified_name)


def trace(module: nn.Module, name: str) -> fx.GraphModule:
    """`module` traced by torch.fx (a bare known layer is wrapped, as fx always traces into
    the root); an IRError naming the model's line where fx cannot follow it."""
    tracer = Tracer()
    if tracer.is_leaf_module(module, ""):
        module = nn.Sequential(module)
    try:
        graph = tracer.trace(module)
        return fx.GraphModule(tracer.root, graph, name)
    except Exception as exc:
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if _TORCH_DIR not in f.filename and f.filename != __file__
        ]
        where = (
            f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno} "
            f"(`{(frames[-1].line or '').strip()}`)"
            if frames
            else ""
        )
        raise IRError(
            f"torch.fx cannot trace `{name}`{where}: {type(exc).__name__}: {exc}. "
            "Data-dependent Python control flow and non-tensor outputs do not trace; "
            "make that branch static or mark the module a leaf."
        ) from exc


def fx_risk(gm: fx.GraphModule) -> str:
    """Why the fx importer's graph of `gm` may differ from torch.export's ("" when nothing
    says so): a construct the two build differently (`_BUILT_OTHERWISE`), or an in-place
    aliasing hazard."""
    for n in gm.graph.nodes:
        if n.op in ("call_function", "call_method") and n.target in _BUILT_OTHERWISE:
            return f"`{n.name}` ({target_name(n)}): the fx importer builds it otherwise than export"
    found = hazard(gm)
    if found is not None:
        return (
            f"in-place op: {found} (torch.fx does not functionalize it; "
            "an out-of-place form, e.g. `y = y.relu()` for `y.relu_()`, has no such hazard)"
        )
    return ""
