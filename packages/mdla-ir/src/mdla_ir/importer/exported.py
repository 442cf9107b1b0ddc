"""torch.export import: export the module on its example inputs, decompose to core ATen (keeping
the composite ops the IR holds whole, `aten.KEEP`), map each ATen op (`aten.ATEN`).

    program = export_program(module, examples)     # ExportRefused if torch.export cannot
    graph = import_program(program, "net")          # UnsupportedError lists every unmapped op

Shapes are fixed by the example inputs, so Python control flow on them (`if x.shape[-1] % 8`)
is evaluated by export, and in-place ops are functionalized. Parameters, buffers and constant
tensors are lifted to graph inputs; the graph signature says which, and `state_dict` /
`constants` hold their values, which become the IR's constants.
"""

from __future__ import annotations

import dataclasses
import os
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import fx, nn
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx._lazy_graph_module import _use_lazy_graph_module
from torch.fx.passes.shape_prop import _extract_tensor_metadata
from torch.utils import _pytree

from mdla_ir.errors import IRError, UnsupportedError
from mdla_ir.graph import Graph, Tensor
from mdla_ir.importer.aten import KEEP, AtenCtx, module_of, pick
from mdla_ir.importer.aten_direct import converter, mappable
from mdla_ir.importer.aten_fold import fold, unit
from mdla_ir.importer.context import Unsupported, source_line, target_name
from mdla_ir.importer.lines import forward_lines
from mdla_ir.importer.outputs import graph_outputs
from mdla_ir.provenance import Provenance, source_hash

_SKIPPED = ("aten._assert", "aten.sym_constrain_range", "aten._functional_assert")


class ExportRefused(IRError):  # noqa: N818  (the refusal is the message; the fx path follows)
    """torch.export could not capture the module; the message is its first line and the
    model's line it stopped at."""


class ProgramModule(nn.Module):
    """An ExportedProgram (a .pt2, a converted TorchScript file) as a module: calling it runs
    the program; `from_torch` imports `program` itself (no second export)."""

    def __init__(self, program: ExportedProgram) -> None:
        super().__init__()
        self.program = program
        self.__dict__["_run"] = program.module()  # not a child: it refuses train()/eval()

    def forward(self, *args: Any) -> Any:
        return self.__dict__["_run"](*args)

    def train(self, mode: bool = True) -> ProgramModule:
        self.training = mode  # the program was exported in eval mode; nothing to switch
        return self


def refusal(exc: BaseException) -> str:
    """`<first line of exc> at <file:line>`: the innermost frame outside torch."""
    first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not any(f"{os.sep}{p}{os.sep}" in f.filename for p in ("torch", "mdla_ir"))
    ]
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {first.strip()}{where}"


def export_program(module: nn.Module, examples: list[torch.Tensor]) -> ExportedProgram:
    """`module` captured by torch.export on `examples`, ready to map (`prepare`)."""
    try:
        # the graph module export rewrites pass by pass is compiled to Python once, when read
        with warnings.catch_warnings(), forward_lines(), _use_lazy_graph_module(True):
            warnings.simplefilter("ignore")
            program = torch.export.export(module, tuple(examples))
    except Exception as exc:
        raise ExportRefused(refusal(exc)) from exc
    return prepare(program)


def prepare(program: ExportedProgram) -> ExportedProgram:
    """`program` itself when every op maps as it is (`aten_direct.mappable`: no re-trace),
    else decomposed to core ATen."""
    if not mappable(program):
        return decompose(program)
    for node in program.graph_module.graph.nodes:  # a loaded .pt2 has `val`s only
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and "tensor_meta" not in node.meta:
            node.meta["tensor_meta"] = _extract_tensor_metadata(val)
    return program


def decompose(program: ExportedProgram) -> ExportedProgram:
    """`program` functionalized and decomposed to core ATen, the ops of `aten.KEEP` whole."""
    table = torch.export.default_decompositions()
    for op in KEEP:
        if op in table:
            del table[op]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decomposed: ExportedProgram = program.run_decompositions(table)
    return decomposed


def _constants(program: ExportedProgram) -> dict[str, tuple[str, Any]]:
    """placeholder name -> (the lifted tensor's qualified name, its value)."""
    found: dict[str, tuple[str, Any]] = {}
    for spec in program.graph_signature.input_specs:
        if spec.kind is InputKind.USER_INPUT or spec.target is None:
            continue
        value = (
            program.state_dict[spec.target]
            if spec.target in program.state_dict
            else program.constants[spec.target]
        )
        found[spec.arg.name] = (spec.target, value)
    return found


def _placeholder(c: AtenCtx, node: fx.Node, lifted: dict[str, tuple[str, Any]]) -> str | None:
    """A user input's name, or None for a lifted constant (made an IR constant if used)."""
    if node.name not in lifted:
        c.tensors[node.name] = Tensor(node.name, tuple(int(d) for d in node.meta["val"].shape))
        c.refs[node] = node.name
        return node.name
    target, value = lifted[node.name]
    if node.users and isinstance(value, torch.Tensor) and value.is_floating_point():
        c.refs[node] = c.const(target, value.detach().cpu().numpy().astype(np.float32))
    elif node.users and isinstance(value, torch.Tensor):
        c.values[node] = value.detach().cpu()
    return None


def _convert(c: AtenCtx, node: fx.Node) -> None:
    if node.op != "call_function":
        raise Unsupported(f"fx node kind {node.op}")
    if node.target.__name__ == "getitem":  # type: ignore[union-attr]
        pick(c, None, tuple(node.args), {})
        return
    fn = converter(node.target)
    if fn is None:
        raise Unsupported(f"ATen op {target_name(node)}")
    fn(c, None, tuple(node.args), dict(node.kwargs))


# The way round an ATen op with no mapping, for a program whose Python model is not at hand.
UNMAPPED_FIX = (
    "`--import fx` traces the Python model instead (a .pt2 has none: compile the "
    "model's Python file), or compute that line with ops the importer maps"
)


def _problem(node: fx.Node, exc: Unsupported, unmapped_fix: Callable[[], str]) -> str:
    """One refusal row: the op, the module it ran in (qualified name and class), the model's
    line, and for an op with no mapping at all, the way round it (`unmapped_fix()`)."""
    scope, cls = module_of(node)
    where = f" in `{scope}` ({cls.rsplit('.', 1)[-1]})" if scope else ""
    line = source_line(node) or "unknown line"
    what, op = str(exc), target_name(node)
    called = "" if op in what else f" ({op})"
    fix = exc.fix or (unmapped_fix() if what.startswith("ATen op ") else "")
    return f"`{node.name}`: {what}{called}{where} at {line}" + (f"; fix: {fix}" if fix else "")


def import_program(
    program: ExportedProgram,
    name: str,
    module: str = "",
    layers: frozenset[str] = frozenset(),
    unmapped_fix: Callable[[], str] = lambda: UNMAPPED_FIX,
) -> Graph:
    """The flat IR of an exported program (every unmapped op named at once); `module` is the
    exported module's class, `layers` its modules that are torch.nn layers (`AtenCtx.layers`),
    `unmapped_fix` the way round an ATen op with no mapping (asked only when one is found)."""
    gm = program.graph_module
    c = AtenCtx(gm, {}, layers=layers)
    lifted = _constants(program)
    inputs: list[str] = []
    outputs: list[str] = []
    failed: set[fx.Node] = set()
    for node in gm.graph.nodes:
        c.node = node
        if node.op == "placeholder":
            user = _placeholder(c, node, lifted)
            inputs += [user] if user is not None else []
        elif node.op == "output":
            tree = _pytree.tree_unflatten(list(node.args[0]), program.call_spec.out_spec)
            outputs += graph_outputs(c, tree, inputs)
        elif not node.users and (str(node.target).startswith(_SKIPPED) or _picks(node)):
            continue
        elif not isinstance(node.meta.get("val"), torch.Tensor | list | tuple):
            c.values[node] = node.meta.get("val")  # a size computed from static shapes
        else:
            node.name = c.op_name(node).replace(".", "_")  # tensors named as fx names them
            if fold(c, node) or unit(c, node):
                continue
            first = len(c.ops)
            try:
                _convert(c, node)
                _in_module(c, node, first)
            except Unsupported as exc:
                if not any(a in failed for a in node.all_input_nodes):
                    c.unsupported.append(_problem(node, exc, unmapped_fix))
                failed.add(node)
                _stand_in(c, node)
    if c.unsupported:
        raise UnsupportedError.of_model(name, c.unsupported)
    state = ((k, _raw(v)) for k, v in program.state_dict.items())
    provenance = Provenance(module=module, source_hash=source_hash(gm.code, state))
    used = {n for op in c.ops for n in (*op.inputs, *op.outputs)} | set(inputs) | set(outputs)
    tensors = {k: t for k, t in c.tensors.items() if k in used}  # lifted, read by a rewrite
    ops = tuple(c.ops)
    return Graph(name, tensors, ops, tuple(inputs), tuple(outputs), provenance=provenance)


def _picks(node: fx.Node) -> bool:
    """A getitem: an unused one (max's indices as export gives them, undecomposed) is skipped."""
    return node.op == "call_function" and getattr(node.target, "__name__", "") == "getitem"


def _in_module(c: AtenCtx, node: fx.Node, first: int) -> None:
    """The ops `node` became (from index `first`) record the module it ran in and the torch
    call the model made (`torch.cat`, `Tensor.mul`) where export recorded it."""
    scope, cls = module_of(node)
    where = f"{scope} ({cls.rsplit('.', 1)[-1]})" if scope else ""
    called = _torch_call(node)
    for i in range(first, len(c.ops)):
        source = c.ops[i].source
        if source is None:
            continue
        source = dataclasses.replace(source, module=where or source.module)
        c.ops[i] = c.ops[i].with_(
            source=dataclasses.replace(source, target=called or source.target)
        )


def _torch_call(node: fx.Node) -> str:
    """`torch.cat` / `Tensor.mul` for a node export traced from that call ("" if unknown)."""
    called = node.meta.get("torch_fn")
    if not called or "." not in str(called[1]):
        return ""
    kind, _, fn = str(called[1]).rpartition(".")
    owner = {"builtin_function_or_method": "torch", "method_descriptor": "Tensor"}.get(kind)
    return f"{owner}.{fn}" if owner else ""


def _stand_in(c: AtenCtx, node: fx.Node) -> None:
    """Keep converting after an unmapped node, so every problem is reported at once."""
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        c.tensors[node.name] = Tensor(node.name, tuple(int(d) for d in val.shape))
        c.refs[node] = node.name


def _raw(t: torch.Tensor) -> np.ndarray[Any, Any]:
    t = t.detach().cpu().contiguous()
    return t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
